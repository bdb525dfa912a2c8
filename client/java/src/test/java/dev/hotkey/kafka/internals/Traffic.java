package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Sending threads for the local-table tests: each sends half of its records on one key and the
 * rest over 500 others ({@code user-N}), 100 records every 5 ms, until closed.
 */
final class Traffic implements AutoCloseable {
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final List<Thread> threads = new ArrayList<>();

  /** Starts a thread that sends each record's key through {@code send}. */
  synchronized void start(Consumer<String> send, String hot) {
    running.set(true);
    Thread th = new Thread(() -> {
      long i = 0;
      while (running.get()) {
        for (int j = 0; j < 100; j++) {
          send.accept(j % 2 == 0 ? hot : "user-" + (i * 100 + j) % 500);
        }
        i++;
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "traffic-" + hot);
    th.start();
    threads.add(th);
  }

  /** Stops and joins every thread (start() may follow). */
  @Override
  public synchronized void close() {
    running.set(false);
    for (Thread th : threads) {
      try {
        th.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    threads.clear();
  }
}
