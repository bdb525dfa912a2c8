// The dashboard in headless Chromium against a real coordinator fed by simulated reports.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  Coordinator, Fleet, OPERATOR_TOKEN, launchBrowser, screenshot, waitFor,
} from './harness.mjs';

const TOPIC = 'orders';
const HOT = 'seller-42';
const COLD = 'book-B1001';
const EVIL = '<script>window.__hkXss=1</script><img src=x onerror="window.__hkXss=2">';
const BINARY_B64 = Buffer.from([0x00, 0xff, 0x3c, 0x62, 0x3e]).toString('base64');  // \0 \xff <b>

describe('dashboard', () => {
  const coord = new Coordinator();
  let fleet;
  let browser;
  let page;
  const pageErrors = [];

  before(async () => {
    await coord.start();
    fleet = new Fleet(coord, [
      {
        topic: TOPIC, partitions: 12, background: 2400,
        keys: [[HOT, 4000], [EVIL, 300], [COLD, 40], [{ b64: BINARY_B64 }, 30],
          ...Array.from({ length: 30 }, (_, i) => [`user-${i}`, 20 + i])],
      },
      { topic: 'payments', partitions: 6, background: 600, keys: [['acct-1', 30], ['acct-2', 25]] },
      // 1,000 keys, wide-0 the busiest and wide-999 the quietest.
      {
        topic: 'wide', partitions: 48, background: 0,
        keys: Array.from({ length: 1000 }, (_, i) => [`wide-${i}`, 2000 - i]),
      },
    ]);
    await fleet.start();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Refused calls (the wrong-token test) log "Failed to load resource"; anything else is a bug.
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) pageErrors.push(m.text());
    });
  });

  after(async () => {
    fleet?.stop();
    await browser?.close();
    await coord.stop();
  });

  test('serves the page with a Content-Security-Policy and no-store API answers', async () => {
    const root = await coord.request('GET', '/');
    assert.equal(root.status, 200);
    assert.match(root.headers.get('content-type') || '', /text\/html/);
    const csp = root.headers.get('content-security-policy') || '';
    assert.match(csp, /script-src 'self'/, `CSP was: ${csp}`);
    const js = await coord.request('GET', '/static/app.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') || '', /javascript/);
    const topics = await coord.request('GET', '/v1/topics');
    assert.match(topics.headers.get('cache-control') || '', /no-store|no-cache/);
  });

  test('the hot key appears with its salt table', async () => {
    await waitFor(async () => {
      const r = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
      return r.status === 200 && r.json.keys.some((k) => k.key === HOT);
    }, `${HOT} in GET /v1/hotkeys`, 30000);
    await page.goto(coord.base + '/');
    await page.locator(`#topics tr[data-topic="${TOPIC}"]`).click();
    const table = page.locator(`.salt-table[data-key="key:${HOT}"]`);
    await table.waitFor({ timeout: 20000 });
    const rows = await table.locator('tbody tr').count();
    assert.ok(rows >= 2, `salt table of ${HOT} has ${rows} rows`);
    // Salts land on distinct partitions (the coordinator verified them).
    const parts = await table.locator('tbody tr td:nth-child(2)').allTextContents();
    assert.equal(new Set(parts).size, parts.length, `partitions ${parts}`);
    const state = page.locator(`#keys tr[data-key="key:${HOT}"] .badge`).first();
    assert.equal(await state.textContent(), 'hot');
    // The overview shows the topic with its skew; the load bars show every partition.
    assert.equal(await page.locator('#load-bars .b').count(), 12);
    await screenshot(page, 'dashboard-hot-key.png');
  });

  test('a wrong token is refused on screen', async () => {
    await page.fill('#token-input', 'not-the-operator-token');
    await page.click('#token-save');
    await page.fill('#act-key', COLD);
    await page.fill('#act-reason', 'should be refused');
    await page.click('#action-form button[data-action="pin"]');
    await page.click('#confirm-ok');
    const head = page.locator('#answer-head');
    await waitFor(async () => /Refused \(HTTP 40[13]\)/.test(await head.textContent()),
      'refusal on screen');
    assert.match(await page.locator('#token-state').textContent(), /refused/);
    const list = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
    assert.ok(!list.json.keys.some((k) => k.key === COLD), 'nothing was pinned');
    await screenshot(page, 'dashboard-wrong-token.png');
  });

  test('pin a key through the page: GET /v1/hotkeys and the audit view show it', async () => {
    await page.click('#token-forget');
    await page.fill('#token-input', OPERATOR_TOKEN);
    await page.click('#token-save');
    await page.fill('#act-key', COLD);
    await page.fill('#act-salts', '3');
    await page.fill('#act-ttl', '30m');
    await page.fill('#act-reason', 'launch day for book B1001');
    await page.click('#action-form button[data-action="pin"]');
    // Confirmation first: cancelling sends nothing.
    // The dialog's close event (which settles the confirmation) is queued as a task after the
    // click, so the answer appears a moment later: wait for it instead of reading it at once.
    await page.click('#confirm-cancel');
    await waitFor(async () => /Cancelled/.test(await page.locator('#answer-head').textContent()),
      'cancellation on screen');
    await page.click('#action-form button[data-action="pin"]');
    assert.match(await page.locator('#confirm-body').textContent(), /launch day/);
    await page.click('#confirm-ok');
    await waitFor(async () => /^Done: pin/.test(await page.locator('#answer-head').textContent()),
      'pin accepted on screen');
    const pinned = await waitFor(async () => {
      const r = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
      return r.json.keys.find((k) => k.key === COLD && k.source === 'pinned');
    }, `${COLD} pinned in GET /v1/hotkeys`);
    assert.equal(pinned.salts.length, 3);
    const auditRow = page.locator('#audit tbody tr', { hasText: COLD }).filter({ hasText: 'pin' });
    await auditRow.first().waitFor({ timeout: 10000 });
    assert.match(await auditRow.first().textContent(), /browser/);
    // The page shows the pinned key's salt table too.
    await page.locator(`.salt-table[data-key="key:${COLD}"]`).waitFor({ timeout: 10000 });
    await screenshot(page, 'dashboard-pinned.png');
  });

  test('deny and allow from the page', async () => {
    await page.fill('#act-key', 'user-3');
    await page.fill('#act-reason', 'account balance: order matters');
    await page.click('#action-form button[data-action="deny"]');
    await page.click('#confirm-ok');
    await waitFor(async () => /^Done: deny/.test(await page.locator('#answer-head').textContent()),
      'deny accepted');
    await waitFor(async () => {
      const r = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
      return (r.json.denied || []).some((d) => (typeof d === 'string' ? d : d.key) === 'user-3');
    }, 'user-3 denied in the list');
    await page.click('#action-form button[data-action="allow"]');
    await page.click('#confirm-ok');
    await waitFor(async () => /^Done: allow/.test(await page.locator('#answer-head').textContent()),
      'allow accepted');
    await page.locator('#audit tbody tr', { hasText: 'user-3' }).filter({ hasText: 'allow' })
      .first().waitFor({ timeout: 10000 });
  });

  test('policies: a never-salt prefix from the page takes the hot key off the list, then removed', async () => {
    await page.fill('#pol-prefix', 'seller-');
    await page.check('#pol-never');
    await page.fill('#pol-hot', '0.3');
    await page.fill('#pol-reason', 'seller ledgers need strict order');
    await page.click('#pol-add');
    // Checked on the page before anything is sent: never salt takes no thresholds.
    await waitFor(async () => /never-salt policy takes no/.test(await page.locator('#policy-answer-head').textContent()),
      'refusal on screen');
    await page.fill('#pol-hot', '');
    await page.click('#pol-add');
    assert.match(await page.locator('#confirm-body').textContent(), /"never_salt": true/);
    await page.click('#confirm-ok');
    await waitFor(async () => /^Done: policy set/.test(await page.locator('#policy-answer-head').textContent()),
      'policy accepted on screen');
    await waitFor(async () => {
      const r = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
      return !r.json.keys.some((k) => k.key === HOT) &&
        (r.json.never_salt || []).some((p) => p.key === 'seller-');
    }, `${HOT} off the list, the list naming the prefix`);
    const row = page.locator('#policies tbody tr', { hasText: 'seller-' });
    await row.first().waitFor({ timeout: 10000 });
    assert.match(await row.first().textContent(), /never salt/);
    assert.match(await row.first().textContent(), /strict order/);
    const keyRow = page.locator('#keys tbody tr[data-key="key:' + HOT + '"]');
    await waitFor(async () => /never salt/.test(await keyRow.textContent()), 'the key marked never salt');
    await waitFor(async () => /Never salted by policy: seller-\*/.test(await page.locator('#denied-line').textContent()),
      'the list view names the prefix');
    await page.locator('#audit tbody tr', { hasText: 'policy_add' }).first().waitFor({ timeout: 10000 });
    // The topics overview counts the topic's policies (GET /v1/topics "policies").
    const policiesCell = page.locator(`#topics tr[data-topic="${TOPIC}"] td.policies`);
    await waitFor(async () => (await policiesCell.textContent()) === '1', 'overview: 1 policy');
    await screenshot(page, 'dashboard-policies.png');

    // A prefix policy with thresholds, then both removed from the table.
    await page.fill('#pol-prefix', 'user-');
    await page.uncheck('#pol-never');
    await page.fill('#pol-hot', '0.25');
    await page.fill('#pol-salts', '2');
    await page.click('#pol-add');
    assert.match(await page.locator('#confirm-body').textContent(), /"max_salts": 2/);
    await page.click('#confirm-ok');
    await page.locator('#policies tbody tr', { hasText: 'hot_fraction 0.25, max 2 salts' }).first()
      .waitFor({ timeout: 10000 });
    await waitFor(async () => (await policiesCell.textContent()) === '2', 'overview: 2 policies');
    for (const prefix of ['seller-', 'user-']) {
      await page.locator('#policies tbody tr', { hasText: prefix }).first().locator('button').click();
      await page.click('#confirm-ok');
      await waitFor(async () => /^Done: policy removed/.test(await page.locator('#policy-answer-head').textContent()),
        `${prefix} removal accepted`);
    }
    await waitFor(async () => (await coord.request('GET', `/v1/topics/${TOPIC}/policies`)).json.policies.length === 0,
      'no policies left');
    await waitFor(async () => (await policiesCell.textContent()) === '0', 'overview: no policies');
    await waitFor(async () => {
      const r = await coord.request('GET', `/v1/hotkeys?topic=${TOPIC}`);
      return r.json.keys.some((k) => k.key === HOT);
    }, `${HOT} salted again`);
  });

  test('a key containing <script> renders as text, binary keys escaped', async () => {
    const cell = page.locator('#keys td.key span.k', { hasText: '<script>' });
    await cell.first().waitFor({ timeout: 20000 });
    assert.equal(await cell.first().textContent(), EVIL);
    assert.equal(await page.evaluate(() => window.__hkXss), undefined);
    assert.equal(await page.locator('#keys img, #keys script, #salt-tables img').count(), 0);
    const bin = page.locator('#keys td.key', { hasText: '\\x00\\xff<b>' });
    await bin.first().waitFor({ timeout: 10000 });
    assert.equal(await bin.first().locator('.badge.bin').count(), 1);
    assert.equal(await page.locator('#keys b').count(), 0);
    assert.deepEqual(pageErrors, []);
    await page.locator('#keys').scrollIntoViewIfNeeded();
    await screenshot(page, 'dashboard-escaping.png');
  });

  test('refused reports: a producer of another family shows by producer and reason', async () => {
    // A crc32 producer (librdkafka's default) on a topic the fleet partitions with murmur2.
    const t = fleet.topics.find((x) => x.topic === 'payments');
    const report = { ...fleet.report(t, 'python-crc-1'), hash: 'crc32', seq: 1 };
    for (let i = 0; i < 3; i++) {
      const r = await coord.request('POST', '/v1/reports', { ...report, seq: i + 1 });
      assert.equal(r.status, 409);
      assert.equal(r.json.reason, 'hash_mismatch');
    }
    await page.evaluate(() => { location.hash = '#/topic/payments'; });
    const row = page.locator('#rejected tbody tr', { hasText: 'python-crc-1' });
    await row.waitFor({ timeout: 20000 });
    const cells = await row.locator('td').allTextContents();
    assert.equal(cells[1], 'hash_mismatch');
    assert.equal(cells[2], '3');
    assert.match(cells[4], /partitioned with murmur2, the report says crc32/);
    assert.equal(await page.locator('#rejected-empty').isHidden(), true);
    await page.locator('#rejected-card').scrollIntoViewIfNeeded();
    await screenshot(page, 'dashboard-rejected.png');
    // A topic without refusals says so.
    await page.evaluate(() => { location.hash = '#/topic/wide'; });
    await page.locator('#rejected-empty').waitFor({ state: 'visible', timeout: 20000 });
  });

  test('1,000 keys: the windowed table reaches every row and filters them all', async () => {
    await page.evaluate(() => { location.hash = '#/topic/wide'; });
    await page.selectOption('#top-n', '1000');
    const count = page.locator('#key-count');
    await waitFor(async () => (await count.textContent()) === '1000 keys', '1000 keys', 20000);
    const inDom = await page.locator('#keys tbody tr[data-key]').count();
    assert.ok(inDom < 200, `${inDom} rows in the DOM for 1000 keys`);
    assert.equal(await page.locator('#keys tbody tr[data-key]').first().getAttribute('data-key'),
      'key:wide-0');
    await page.locator('#keys-scroll').evaluate((box) => { box.scrollTop = box.scrollHeight; });
    await page.locator('#keys tr[data-key="key:wide-999"]').waitFor({ timeout: 10000 });
    await page.fill('#key-filter', 'wide-5');
    assert.equal(await count.textContent(), '111 of 1000 keys');  // wide-5, -50..59, -500..599
    await page.fill('#key-filter', '');
  });
});
