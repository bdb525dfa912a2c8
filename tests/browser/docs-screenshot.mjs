// Makes docs/dashboard.png: a real coordinator, a simulated fleet on three topics whose hot
// key gets detected and salted while the page watches, one operator pin and one deny.
//
//   node docs-screenshot.mjs [OUT.png]     (HOTKEY_BIN_DIR: where hotkey-coordinator is)
import path from 'node:path';

import {
  Coordinator, Fleet, OPERATOR_TOKEN, launchBrowser, repoRoot, waitFor,
} from './harness.mjs';

const out = path.resolve(process.argv[2] || path.join(repoRoot, 'docs', 'dashboard.png'));
// The default warm-up: the window fills (skew visible) before the first salting.
const coord = new Coordinator({ warmup_ms: 8000 });
await coord.start();
const browser = await launchBrowser();
let fleet;
try {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1440, height: 1400 });
  fleet = new Fleet(coord, [
    {
      topic: 'orders', partitions: 12, background: 2400,
      keys: [['seller-42', 4000], ['book-B1001', 60], ['acct-7', 300],
        ...Array.from({ length: 40 }, (_, i) => [`user-${1000 + i * 37}`, 60 - i])],
    },
    { topic: 'payments', partitions: 6, background: 900, keys: [['acct-1', 40], ['acct-2', 35]] },
    { topic: 'clicks', partitions: 24, background: 4800, keys: [['page-/home', 2600], ['page-/cart', 90]] },
  ]);
  // The page is open before the first report so its history shows the skew falling once the
  // fleet routes with the salt tables.
  await page.goto(coord.base + '/#/topic/orders');
  await page.locator('#conn[data-state="ok"]').waitFor();
  await page.fill('#token-input', OPERATOR_TOKEN);
  await page.click('#token-save');
  await fleet.start();
  await waitFor(async () => {
    const r = await coord.request('GET', '/v1/hotkeys?topic=orders');
    return r.json && r.json.keys.some((k) => k.key === 'seller-42');
  }, 'seller-42 salted', 30000);
  const pin = await coord.request('POST', '/v1/topics/orders/pins',
    { key: 'book-B1001', salts: 3, ttl_s: 7200, reason: 'launch day: book B1001' }, OPERATOR_TOKEN);
  const deny = await coord.request('POST', '/v1/topics/orders/denies',
    { key: 'acct-7', reason: 'balance updates must stay in order' }, OPERATOR_TOKEN);
  if (pin.status !== 200 || deny.status !== 200) throw new Error(`pin ${pin.text} deny ${deny.text}`);
  // Let the history chart fill for a while (wall-clock: it is the picture's x axis).
  const until = Date.now() + 20000;
  await waitFor(() => Date.now() > until, 'history', 30000, 500);
  await page.click('#audit-refresh');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out, fullPage: false });
  if (process.env.HOTKEY_FULL_SCREENSHOT) {
    await page.screenshot({ path: process.env.HOTKEY_FULL_SCREENSHOT, fullPage: true });
  }
  console.log(`wrote ${out}`);
} finally {
  fleet?.stop();
  await browser.close();
  await coord.stop();
}
