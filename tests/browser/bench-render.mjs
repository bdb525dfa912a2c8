// Measures the dashboard at scale (not a test: speed goals are not asserted in tests).
// A real coordinator gets 100 small topics plus one topic with 1,000 keys; the page shows
// that topic with all 1,000 keys while live updates run. Prints milliseconds.
//
//   node bench-render.mjs     (HOTKEY_BIN_DIR: where hotkey-coordinator is)
import { Coordinator, Fleet, launchBrowser, waitFor } from './harness.mjs';

const TOPICS = 100;
const KEYS = 1000;

const coord = new Coordinator();
await coord.start();
const topics = Array.from({ length: TOPICS - 1 }, (_, i) => ({
  topic: `topic-${String(i).padStart(3, '0')}`, partitions: 12, background: 1200,
  keys: [[`k-${i}-a`, 300 + i], [`k-${i}-b`, 40], [`k-${i}-c`, 30]],
}));
topics.push({
  topic: 'big', partitions: 48, background: 4800,
  keys: Array.from({ length: KEYS }, (_, i) => [`key-${i}`, i < 3 ? 3000 - i * 500 : 1000 - Math.floor(i * 0.9)]),
});
const fleet = new Fleet(coord, topics, 1, 1000);
const browser = await launchBrowser();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  await fleet.start();
  const page = await browser.context.newPage();
  await page.goto(coord.base + '/#/topic/big');
  await page.selectOption('#top-n', '1000');
  await waitFor(async () => /^1000 keys/.test(await page.locator('#key-count').textContent()),
    `${KEYS} keys`, 60000, 250);
  await waitFor(async () => (await page.locator('#topics tbody tr').count()) >= TOPICS,
    `${TOPICS} topic rows`, 60000, 250);
  // A full re-render of one table, timed inside the page (synchronous DOM work + layout).
  const timeRender = (inputId) => page.evaluate((id) => {
    const input = document.getElementById(id);
    const runs = [];
    for (let i = 0; i < 7; i++) {
      input.value = 'no-such-key';
      input.dispatchEvent(new Event('input'));
      const t = performance.now();
      input.value = '';
      input.dispatchEvent(new Event('input'));
      void document.body.offsetHeight;  // include style and layout
      runs.push(performance.now() - t);
    }
    return runs;
  }, inputId);
  const keys = await timeRender('key-filter');
  const scroll = await page.evaluate(async () => {
    const box = document.getElementById('keys-scroll');
    const frames = [];
    for (let y = 0; y <= box.scrollHeight; y += box.clientHeight) {
      const t = performance.now();
      box.scrollTop = y;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      frames.push(performance.now() - t);
    }
    const last = [...document.querySelectorAll('#keys tbody tr[data-key]')].pop();
    return { frames, lastKey: last && last.dataset.key };
  });
  const overview = await timeRender('topic-filter');
  // Long tasks (> 50 ms on the main thread) during 15 s of live updates.
  const long = await page.evaluate(() => new Promise((resolve) => {
    const seen = [];
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) seen.push(e.duration);
    });
    obs.observe({ type: 'longtask', buffered: false });
    setTimeout(() => { obs.disconnect(); resolve(seen); }, 15000);
  }));
  console.log(`render the keys table (${KEYS} keys, windowed): median ${median(keys).toFixed(1)} ms, max ${Math.max(...keys).toFixed(1)} ms (7 runs)`);
  console.log(`render ${TOPICS} topic rows: median ${median(overview).toFixed(1)} ms, max ${Math.max(...overview).toFixed(1)} ms (7 runs)`);
  console.log(`scroll through all keys a page at a time: median ${median(scroll.frames).toFixed(1)} ms per page, ` +
    `max ${Math.max(...scroll.frames).toFixed(1)} ms; last row ${scroll.lastKey}`);
  console.log(`long tasks during 15 s of live updates: ${long.length}` +
    (long.length ? `, max ${Math.max(...long).toFixed(0)} ms` : ''));
} finally {
  fleet.stop();
  await browser.close();
  await coord.stop();
}
