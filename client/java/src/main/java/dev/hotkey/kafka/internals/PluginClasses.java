package dev.hotkey.kafka.internals;

/** Which of a producer's configured plugin classes are this library's (by name or Class). */
final class PluginClasses {
  private PluginClasses() {}

  /** The class a config value names (a Class, or its name), or null when it cannot load. */
  static Class<?> load(Object nameOrClass) {
    if (nameOrClass instanceof Class) {
      return (Class<?>) nameOrClass;
    }
    String name = nameOrClass == null ? "" : nameOrClass.toString().trim();
    if (name.isEmpty()) {
      return null;
    }
    try {
      return Class.forName(name, false, PluginClasses.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return null; // not ours (Kafka reports a class it cannot load itself)
    }
  }

  /** Whether the value names {@code base} or a subclass of it. */
  static boolean is(Object nameOrClass, Class<?> base) {
    Class<?> c = load(nameOrClass);
    return c != null && base.isAssignableFrom(c);
  }
}
