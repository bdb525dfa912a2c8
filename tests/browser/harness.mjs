// Test harness: a real hotkey-coordinator on loopback with a temp data dir, a simulated
// producer fleet that POSTs JSON reports to it, and headless Debian Chromium driven by
// playwright-core (never a downloaded browser).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
export const binDir = process.env.HOTKEY_BIN_DIR || path.join(repoRoot, 'build', 'bin');
export const artifactsDir =
  process.env.HOTKEY_ARTIFACTS_DIR || path.join(repoRoot, 'build', 'test-artifacts');
export const chromiumPath = process.env.HOTKEY_CHROMIUM || '/usr/bin/chromium';
export const OPERATOR_TOKEN = 'browser-test-operator-token';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `fn` until it returns a truthy value or the deadline passes (no fixed sleeps).
export async function waitFor(fn, what, timeoutMs = 20000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}` + (last ? `: ${last.message}` : ''));
    }
    await sleep(everyMs);
  }
}

// Kafka's murmur2 partitioner (Java client default), so the simulated producers place their
// per-partition counts where real ones would.
export function murmur2Partition(key, partitions) {
  const data = Buffer.from(key);
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ data.length) | 0;
  const n4 = data.length >> 2;
  for (let i = 0; i < n4; i++) {
    const o = i * 4;
    let k = data[o] | (data[o + 1] << 8) | (data[o + 2] << 16) | (data[o + 3] << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = data.length & ~3;
  switch (data.length & 3) {
    case 3: h ^= data[tail + 2] << 16; // falls through
    case 2: h ^= data[tail + 1] << 8; // falls through
    case 1: h ^= data[tail]; h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return (h & 0x7fffffff) % partitions;
}

export class Coordinator {
  // `config`: coordinator settings on top of the tests' fast defaults.
  constructor(config = {}) {
    this.config = config;
    this.proc = null;
    this.base = '';
    this.dataDir = '';
    this.log = '';
  }

  async start() {
    const exe = path.join(binDir, 'hotkey-coordinator');
    if (!fs.existsSync(exe)) throw new Error(`${exe} is missing: build the project first`);
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hotkey-browser-'));
    // Detection from the first report and a fast planning cadence keep the tests short.
    const config = path.join(this.dataDir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({
      warmup_ms: 0, plan_interval_ms: 200, keep_alive_timeout_s: 1, ...this.config,
    }));
    // Port 0: the coordinator picks a free port and logs it, so there is no pick-then-bind race.
    this.proc = spawn(exe, ['--listen', '127.0.0.1:0', '--data', path.join(this.dataDir, 'data'),
      '--config', config, '--operator-token', `browser=${OPERATOR_TOKEN}`],
    { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d) => {
      this.log += d.toString();
      if (this.log.length > 200000) this.log = this.log.slice(-100000);
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    let exited = null;
    this.proc.on('exit', (code, sig) => { exited = `exit ${code} ${sig || ''}`; });
    const port = await waitFor(() => {
      if (exited) throw new Error(`coordinator ${exited}:\n${this.log}`);
      for (const line of this.log.split('\n')) {
        try {
          const j = JSON.parse(line);
          if (j.event === 'listening') return j.port;
        } catch { /* not a JSON log line */ }
      }
      return 0;
    }, 'the coordinator\'s "listening" log line', 20000, 50);
    this.base = `http://127.0.0.1:${port}`;
    await waitFor(async () => {
      if (exited) throw new Error(`coordinator ${exited}:\n${this.log}`);
      const r = await fetch(this.base + '/healthz');
      return r.ok;
    }, 'coordinator /healthz', 20000);
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      const done = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
      await done;
      clearTimeout(timer);
    }
    if (this.dataDir) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }

  async request(method, p, body, tok) {
    const headers = {};
    if (tok) headers.Authorization = `Bearer ${tok}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(this.base + p, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { json = null; }
    return { status: r.status, headers: r.headers, text, json };
  }
}

// A simulated producer fleet: every tick each producer reports one window for each topic.
// Like real clients it routes with the latest published list (a listed key's records go to
// its salts' partitions by weight) and says which list version it routed with, so the
// coordinator's per-partition load shows where salted traffic goes.
// `keys` is [[key (string, or {b64}), records per window per producer], ...].
export class Fleet {
  constructor(coord, topics, producers = 2, windowMs = 500) {
    this.coord = coord;
    this.topics = topics;  // [{topic, partitions, keys, background}]
    this.producers = producers;
    this.windowMs = windowMs;
    this.seq = 0;
    this.timer = null;
    this.errors = [];
    this.lists = new Map();  // topic -> the list JSON the fleet routes with
  }

  listed(topic, key) {
    const list = this.lists.get(topic);
    if (!list) return null;
    return (list.keys || []).find((k) =>
      (typeof key === 'string' ? k.key === key : k.key_b64 === key.b64)) || null;
  }

  report(t, producer) {
    const counts = new Array(t.partitions).fill(0);
    const items = [];
    let total = 0;
    const list = this.lists.get(t.topic);
    const routed = list && list.partitions === t.partitions;
    for (const [key, count] of t.keys) {
      const bytes = typeof key === 'string' ? Buffer.from(key) : Buffer.from(key.b64, 'base64');
      const hot = routed ? this.listed(t.topic, key) : null;
      if (hot && hot.salts.length) {
        const sum = hot.salts.reduce((a, s) => a + s.weight, 0);
        let given = 0;
        hot.salts.forEach((s, i) => {
          const part = i + 1 === hot.salts.length ? count - given : Math.floor((count * s.weight) / sum);
          counts[s.partition] += part;
          given += part;
        });
      } else {
        counts[murmur2Partition(bytes, t.partitions)] += count;
      }
      total += count;
      items.push(typeof key === 'string' ? { key, count, error: 0 }
                                         : { key_b64: key.b64, count, error: 0 });
    }
    // Cold background traffic: many keys too small to be in the sketch, spread evenly.
    const bg = Math.floor((t.background ?? 0) / t.partitions);
    for (let p = 0; p < t.partitions; p++) counts[p] += bg;
    total += bg * t.partitions;
    return {
      producer, topic: t.topic, partitions: t.partitions, hash: 'murmur2',
      window_ms: this.windowMs, sample_rate: 1, total, partition_counts: counts,
      seq: this.seq, sent_at_ms: Date.now(), list_version: routed ? list.version : 0,
      sketch: { capacity: Math.max(items.length, 1) * 2, min: 0, total, items },
    };
  }

  async tick() {
    this.seq++;
    const posts = [];
    const newer = new Set();
    for (const t of this.topics) {
      for (let i = 0; i < this.producers; i++) {
        posts.push(this.coord.request('POST', '/v1/reports', this.report(t, `producer-${i}`))
          .then((r) => {
            if (r.status >= 300) this.errors.push(`${r.status} ${r.text}`);
            const known = this.lists.get(t.topic)?.version ?? 0;
            if (r.json && r.json.list_version > known) newer.add(t.topic);
          }));
      }
    }
    await Promise.all(posts);
    await Promise.all([...newer].map(async (topic) => {
      const r = await this.coord.request('GET', `/v1/hotkeys?topic=${encodeURIComponent(topic)}`);
      if (r.status === 200 && r.json) this.lists.set(topic, r.json);
    }));
  }

  async start() {
    await this.tick();
    if (this.errors.length) throw new Error(`reports rejected: ${this.errors.join('; ')}`);
    const loop = async () => {
      try { await this.tick(); } catch (e) { this.errors.push(e.message); }
      if (this.timer !== null) this.timer = setTimeout(loop, this.windowMs);
    };
    this.timer = setTimeout(loop, this.windowMs);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hotkey-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page, name) {
  fs.mkdirSync(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
