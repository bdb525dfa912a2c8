// hotkey dashboard. Plain script, no dependencies, loaded from /static so that a strict
// Content-Security-Policy (script-src 'self') holds. Every piece of data reaches the page
// through textContent or attribute setters, never as HTML: keys are arbitrary bytes.
'use strict';

(() => {
  const POLL_MS = 1500;
  const AUDIT_EVERY = 4;  // polls between audit refreshes (actions refresh it at once)
  const HISTORY_POINTS = 120;
  const SKEW_WARN = 2.0;  // the common alert threshold for max/avg partition load
  const TOKEN_KEY = 'hotkey.operatorToken';

  const $ = (id) => document.getElementById(id);

  // ---- small DOM helpers (text only) ----
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') node.className = v;
        else if (k === 'text') node.textContent = v;
        else if (k === 'title') node.title = v;
        else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
        else if (k === 'dataset') Object.assign(node.dataset, v);
        else node.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }
  const td = (text, cls, title) => el('td', { class: cls, text: text, title: title });
  function svg(tag, attrs) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    return node;
  }

  // ---- formatting ----
  const nf0 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
  const nf1 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
  const nf2 = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const fmtRate = (v) => (num(v) === null ? '–' : v >= 100 ? nf0.format(v) : nf1.format(v));
  const fmtInt = (v) => (num(v) === null ? '–' : nf0.format(v));
  const fmtPct = (v) => (num(v) === null ? '–' : nf1.format(v * 100) + '%');
  const fmtSkew = (v) => (num(v) === null ? '–' : nf2.format(v));
  function fmtTime(ms) {
    if (num(ms) === null || ms <= 0) return '–';
    const d = new Date(ms);
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }
  function fmtAgo(ms) {
    if (num(ms) === null || ms <= 0) return '';
    const s = Math.round((ms - Date.now()) / 1000);
    const a = Math.abs(s);
    const txt = a < 90 ? a + 's' : a < 5400 ? Math.round(a / 60) + 'm' : Math.round(a / 3600) + 'h';
    return s >= 0 ? 'in ' + txt : txt + ' ago';
  }

  // ---- keys are bytes: "key" (UTF-8 text) or "key_b64" ----
  function keyRef(obj) {
    if (obj && typeof obj.key_b64 === 'string') return { field: 'key_b64', value: obj.key_b64 };
    if (obj && typeof obj.key === 'string') return { field: 'key', value: obj.key };
    return { field: 'key', value: '' };
  }
  const keyId = (ref) => ref.field + ':' + ref.value;
  function b64ToBytes(b64) {
    try {
      const bin = atob(b64);
      const out = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out;
    } catch (e) {
      return null;
    }
  }
  // Printable form of a key for one line: control characters and non-UTF-8 bytes as \xNN.
  // A key reference's bytes (null: bad base64).
  function refBytes(ref) {
    return ref.field === 'key_b64' ? b64ToBytes(ref.value) : new TextEncoder().encode(ref.value);
  }
  function printableKey(ref) {
    if (ref.field === 'key_b64') {
      const bytes = b64ToBytes(ref.value);
      if (!bytes) return '(bad base64) ' + ref.value;
      let s = '';
      for (const b of bytes) {
        if (b === 0x5c) s += '\\\\';
        else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
        else s += '\\x' + b.toString(16).padStart(2, '0');
      }
      return s;
    }
    return ref.value.replace(/[\u0000-\u001f\u007f\\]/g, (c) =>
      c === '\\' ? '\\\\' : '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  }
  function keyCell(ref, extraClass) {
    const cell = el('td', { class: 'key' + (extraClass ? ' ' + extraClass : '') });
    if (ref.field === 'key_b64') cell.append(el('span', { class: 'badge bin', text: 'bin', title: 'binary key; base64 ' + ref.value }));
    const text = printableKey(ref);
    cell.append(el('span', { class: 'k', text: text, title: text }));
    return cell;
  }

  // ---- field access: the names the server writes (common/src/api_model.cc for the API's
  // answers, common/src/hotkey_list.cc for the hot-key list). tests/web/check_web_fields.py
  // checks every name read here against those writers. A missing field reads as `dflt`
  // (an older coordinator may not send it).
  function field(obj, name, dflt) {
    if (!obj) return dflt;
    const v = obj[name];
    return v === undefined || v === null ? dflt : v;
  }
  function asArray(body, name) {
    if (Array.isArray(body)) return body;
    const v = field(body, name, []);
    return Array.isArray(v) ? v : [];
  }
  // Why a listed key is salted: detected, balance or pinned. The list sends a balance key as
  // "source": "detected" with "balance": true (clients that know two sources keep reading it);
  // the top view sends "source": "balance".
  function sourceOf(k) {
    if (field(k, 'balance', false) === true) return 'balance';
    return String(field(k, 'source', 'detected'));
  }

  // ---- operator token: entered once per browser session ----
  const token = {
    get: () => sessionStorage.getItem(TOKEN_KEY) || '',
    set: (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY)),
  };
  function showTokenState(extra) {
    const has = token.get() !== '';
    $('token-state').textContent = extra || (has ? 'set for this session' : 'not set');
    $('token-forget').hidden = !has;
  }

  // ---- HTTP ----
  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const t = token.get();
    if (t) headers.Authorization = 'Bearer ' + t;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      return { ok: false, status: 0, body: { error: 'coordinator unreachable: ' + e.message }, text: '' };
    }
    const text = await res.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch (e) {
      parsed = null;
    }
    return { ok: res.ok, status: res.status, body: parsed, text };
  }
  const topicPath = (t) => 'v1/topics/' + encodeURIComponent(t);

  // ---- state ----
  const state = {
    topics: [],
    topicsSig: '',
    sort: { key: 'skew', dir: 'desc' },
    selected: null,
    detail: null,
    top: [],
    policies: [],
    list: null,
    renderSig: '',
    history: new Map(),  // topic -> [{t, skew, hot}]
    polls: 0,
    auditSig: '',
  };

  // ---- topics overview ----
  function topicRow(t) {
    return {
      topic: String(field(t, 'topic', '')),
      rate: num(field(t, 'rate')),
      partitions: num(field(t, 'partitions')),
      producers: num(field(t, 'producers')),
      version: num(field(t, 'version')),
      skew: num(field(t, 'skew')),
      predicted: num(field(t, 'predicted_skew')),
      idle: num(field(t, 'idle_partitions_ratio')),
      hot: num(field(t, 'hot_keys')),
      pins: num(field(t, 'pins')),
      denies: num(field(t, 'denies')),
      policies: num(field(t, 'policies')),
      // Cluster mode: the member that owns the topic; false when it did not answer the member
      // this page talks to (the measurements are then missing).
      owner: field(t, 'owner', null),
      ownerAnswered: field(t, 'owner_answered', true),
    };
  }
  function ownerTitle(r) {
    if (r.owner === null) return undefined;
    if (r.owner === '') return 'no member owns this topic now';
    return 'owned by ' + r.owner + (r.ownerAnswered ? '' : ' (did not answer: no measurements)');
  }
  function recordHistory(topic, skew, hot) {
    let h = state.history.get(topic);
    if (!h) state.history.set(topic, (h = []));
    h.push({ t: Date.now(), skew, hot });
    if (h.length > HISTORY_POINTS) h.splice(0, h.length - HISTORY_POINTS);
  }
  function renderTopics() {
    const filter = $('topic-filter').value.trim().toLowerCase();
    const { key, dir } = state.sort;
    const rows = state.topics.filter((r) => !filter || r.topic.toLowerCase().includes(filter));
    rows.sort((a, b) => {
      const x = a[key], y = b[key];
      let c;
      if (typeof x === 'string' || typeof y === 'string') c = String(x).localeCompare(String(y));
      else c = (x ?? -Infinity) - (y ?? -Infinity);
      return dir === 'asc' ? c : -c;
    });
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const skewWarn = r.skew !== null && r.skew > SKEW_WARN;
      const tr = el('tr', { dataset: { topic: r.topic }, class: r.topic === state.selected ? 'selected' : '' },
        td(r.topic, 'name', ownerTitle(r)),
        td(fmtRate(r.rate), 'num'),
        td(fmtInt(r.partitions), 'num'),
        td(fmtInt(r.producers), 'num'),
        td(fmtInt(r.version), 'num'),
        td(fmtSkew(r.skew), 'num skew' + (skewWarn ? ' warn' : ''), skewWarn ? 'max/avg above ' + SKEW_WARN : undefined),
        td(fmtSkew(r.predicted), 'num' + (r.predicted !== null && r.predicted > SKEW_WARN ? ' warn' : ''),
          'max/avg predicted once producers route with the published list'),
        td(fmtPct(r.idle), 'num', 'partitions with under 10% of the average load'),
        td(fmtInt(r.hot), 'num'),
        td(fmtInt(r.pins) + ' / ' + fmtInt(r.denies), 'num'),
        td(fmtInt(r.policies), 'num policies', 'prefix policies of the topic (its page lists them)'));
      frag.append(tr);
    }
    $('topics').tBodies[0].replaceChildren(frag);
    $('topics-empty').hidden = state.topics.length !== 0;
    $('topic-count').textContent = state.topics.length
      ? (rows.length === state.topics.length ? '' : rows.length + ' of ') + state.topics.length + ' topics'
      : '';
    for (const th of $('topics').tHead.rows[0].cells) {
      if (th.dataset.sort === key) th.dataset.sorted = dir;
      else delete th.dataset.sorted;
    }
  }

  // ---- one topic ----
  function listIndex() {
    const hot = new Map();
    const denied = new Map();
    const list = state.list;
    if (list) {
      for (const k of asArray(list, 'keys')) hot.set(keyId(keyRef(k)), k);
      for (const d of asArray(list, 'denied')) {
        const ref = typeof d === 'string' ? { field: 'key', value: d } : keyRef(d);
        denied.set(keyId(ref), d);
      }
    }
    return { hot, denied };
  }
  function saltsOf(k) {
    return asArray(k, 'salts').map((s) => ({
      salt: field(s, 'salt'), partition: field(s, 'partition'), weight: num(field(s, 'weight')),
    }));
  }
  function saltTable(k, captionText) {
    const salts = saltsOf(k);
    const ref = keyRef(k);
    const box = el('div', { class: 'salt-table', dataset: { key: keyId(ref) } });
    const head = el('h4', { title: printableKey(ref) });
    const src = sourceOf(k);
    head.append(el('span', { class: 'badge ' + (src === 'detected' ? 'hot' : src), text: src }));
    if (ref.field === 'key_b64') head.append(el('span', { class: 'badge bin', text: 'bin' }));
    head.append(el('span', { text: printableKey(ref) }));
    box.append(head);
    if (captionText) box.append(el('div', { class: 'muted small', text: captionText }));
    const totalW = salts.reduce((a, s) => a + (s.weight || 0), 0) || 1;
    const tbl = el('table', null, el('thead', null, el('tr', null,
      el('th', { text: 'salt' }), el('th', { text: 'partition' }), el('th', { text: 'weight' }))));
    const body = el('tbody');
    for (const s of salts) {
      body.append(el('tr', null, el('td', { text: String(s.salt) }), el('td', { text: String(s.partition) }),
        el('td', { text: s.weight === null ? '–' : nf0.format(s.weight) + ' (' + fmtPct(s.weight / totalW) + ')' })));
    }
    tbl.append(body);
    box.append(tbl);
    return box;
  }
  // Operator pins and denies of the selected topic, by key id (from GET /v1/topics/{topic}).
  function operatorIndex() {
    const pins = new Map();
    const denies = new Map();
    for (const p of asArray(state.detail, 'pinned')) pins.set(keyId(keyRef(p)), p);
    for (const d of asArray(state.detail, 'denied')) {
      if (d && typeof d === 'object') denies.set(keyId(keyRef(d)), d);
    }
    return { pins, denies };
  }
  function pinText(p) {
    let t = 'pinned by ' + (p.by || '?') + ': ' + (p.reason || '');
    if (num(p.salts) > 0) t += ' (' + p.salts + ' salts)';
    if (num(p.expires_at_ms) > 0) t += ', expires ' + fmtAgo(p.expires_at_ms);
    return t;
  }
  // The policy of the longest prefix of the key `ref` (null: none), as the coordinator applies it.
  function policyOf(ref) {
    const bytes = refBytes(ref);
    if (!bytes) return null;
    let best = null, bestLen = -1;
    for (const p of state.policies) {
      const pre = refBytes(keyRef(p));
      if (!pre || pre.length > bytes.length || pre.length <= bestLen) continue;
      let match = true;
      for (let i = 0; i < pre.length && match; i++) match = pre[i] === bytes[i];
      if (match) {
        best = p;
        bestLen = pre.length;
      }
    }
    return best;
  }
  function policyText(p) {
    if (field(p, 'never_salt', false) === true) return 'never salt';
    const parts = [];
    const hf = num(field(p, 'hot_fraction'));
    const ms = num(field(p, 'max_salts'));
    if (hf) parts.push('hot_fraction ' + hf);
    if (ms) parts.push('max ' + ms + ' salts');
    return parts.join(', ') || '–';
  }
  function whyText(item, inList, pin, deny, isDenied, neverSalt) {
    if (deny) return 'denied by ' + (deny.by || '?') + ': ' + (deny.reason || '') + ' (never salted)';
    if (isDenied) return 'denied: never salted';
    if (pin) return pinText(pin);
    if (neverSalt) {
      const p = neverSalt === true ? null : neverSalt;
      return 'never salted: prefix policy' + (p ? ' "' + printableKey(keyRef(p)) + '" by ' +
        (field(p, 'by', '?')) + ': ' + field(p, 'reason', '') : '');
    }
    const parts = num(field(state.detail, 'partitions')) || num(field(state.list, 'partitions'));
    const fair = parts ? ' vs a fair share of ' + fmtPct(1 / parts) + ' per partition' : '';
    const share = num(field(inList || item, 'share'));
    if (inList) {
      let t = sourceOf(inList) === 'balance'
        ? 'balance: ' + (share !== null ? fmtPct(share) + ' of the topic' + fair : '') +
          ', below the hot threshold, salted to level the partitions'
        : 'detected: ' + (share !== null ? fmtPct(share) + ' of the topic' + fair : 'above the hot threshold');
      const home = num(field(item, 'partition'));
      const loads = partitionLoads();
      if (home !== null && home >= 0 && home < loads.length) {
        const avg = loads.reduce((a, b) => a + b, 0) / loads.length;
        if (avg > 0) t += '; its partition p' + home + ' carries ×' + nf2.format(loads[home] / avg) + ' the average';
      }
      return t;
    }
    if (field(item, 'hot') === true) return 'hot: ' + (share !== null ? fmtPct(share) + fair : '');
    if (share !== null && parts) return 'cold: ' + fmtPct(share) + fair;
    return '';
  }
  // The keys table is windowed: only the rows in view (plus a margin) are in the DOM, so a
  // topic with 1,000 keys costs the same per update as one with 40. Rows have one fixed
  // height (single-line cells; the full "why" is in the cell's title).
  const ROW_MARGIN = 20;
  function renderKeys() {
    const { hot, denied } = listIndex();
    const { pins, denies } = operatorIndex();
    const filter = $('key-filter').value.trim().toLowerCase();
    const seen = new Set();
    const rows = [];
    for (const item of state.top) {
      const ref = keyRef(item);
      const id = keyId(ref);
      seen.add(id);
      rows.push({ item, ref, id });
    }
    // Listed keys that fell out of the top-N (pins of quiet keys) still deserve a row.
    for (const [id, k] of hot) {
      if (!seen.has(id)) {
        seen.add(id);
        rows.push({ item: k, ref: keyRef(k), id });
      }
    }
    state.rowsById = new Map(rows.map((r) => [r.id, r]));
    state.keyRows = filter ? rows.filter((r) => printableKey(r.ref).toLowerCase().includes(filter)) : rows;
    state.keyCtx = { hot, denied, pins, denies };
    $('key-count').textContent = state.keyRows.length +
      (state.keyRows.length !== rows.length ? ' of ' + rows.length : '') + ' keys';
    paintKeys();
    renderOperator(pins, denies);
  }
  function keyRow({ item, ref, id }) {
    const { hot, denied, pins, denies } = state.keyCtx;
    const inList = hot.get(id);
    const pin = pins.get(id);
    const deny = denies.get(id);
    const isDenied = !!deny || denied.has(id) || field(item, 'denied') === true;
    const isPinned = !!pin || field(item, 'pinned') === true ||
      (inList && sourceOf(inList) === 'pinned');
    const isHot = !!inList || field(item, 'hot') === true;
    const policy = policyOf(ref);
    const neverSalt = !isPinned && !isDenied && (field(item, 'never_salt') === true ||
      (policy && field(policy, 'never_salt', false) === true))
      ? (policy || true) : null;
    const stateCell = el('td', { class: 'state' });
    if (isPinned) stateCell.append(el('span', { class: 'badge pinned', text: 'pinned' }));
    else if (inList && sourceOf(inList) === 'balance') {
      stateCell.append(el('span', { class: 'badge balance', text: 'balance',
        title: 'below the hot threshold, salted to level the partitions' }));
    } else if (isHot) stateCell.append(el('span', { class: 'badge hot', text: inList ? 'hot' : 'hot, not yet salted' }));
    if (isDenied) stateCell.append(el('span', { class: 'badge denied', text: 'denied' }));
    if (neverSalt) {
      stateCell.append(el('span', { class: 'badge denied never-salt', text: 'never salt',
        title: 'under a never_salt prefix policy' }));
    } else if (!isHot && !isDenied && !isPinned) {
      stateCell.append(el('span', { class: 'badge cold', text: 'cold' }));
    }
    const salts = inList ? saltsOf(inList) : [];
    const saltCell = el('td');
    if (salts.length) {
      saltCell.append(el('button', { type: 'button', class: 'link', text: salts.length + ' salts', dataset: { salts: id },
        title: 'show the salt table' }));
    }
    const why = whyText(item, inList, pin, deny, isDenied, neverSalt);
    const home = num(field(item, 'partition'));
    return el('tr', { dataset: { key: id }, class: isHot ? 'hot' : '' },
      keyCell(ref),
      td(fmtRate(num(field(item, 'rate'))), 'num'),
      td(fmtPct(num(field(item, 'share'))), 'num'),
      td(fmtInt(num(field(item, 'count'))), 'num'),
      td(fmtInt(num(field(item, 'error'))), 'num', 'Space-Saving error bound: the true count is within [count - error, count]'),
      td(home === null || home < 0 ? '–' : 'p' + home, 'num', 'the partition the unsalted key hashes to'),
      stateCell,
      td(why, 'why', why),
      saltCell,
      el('td', null, el('button', { type: 'button', class: 'link', text: 'act…', dataset: { act: id } })));
  }
  function spacer(rows) {
    const tr = el('tr', { class: 'spacer', 'aria-hidden': 'true' }, el('td', { colspan: 10 }));
    tr.style.height = rows * state.rowHeight + 'px';
    return tr;
  }
  function paintKeys() {
    const box = $('keys-scroll');
    const rows = state.keyRows || [];
    if (!state.rowHeight) state.rowHeight = 27;
    const first = Math.max(0, Math.floor(box.scrollTop / state.rowHeight) - ROW_MARGIN);
    const last = Math.min(rows.length, first + Math.ceil(box.clientHeight / state.rowHeight) + 2 * ROW_MARGIN);
    const frag = document.createDocumentFragment();
    if (first > 0) frag.append(spacer(first));
    for (let i = first; i < last; i++) frag.append(keyRow(rows[i]));
    if (last < rows.length) frag.append(spacer(rows.length - last));
    const body = $('keys').tBodies[0];
    body.replaceChildren(frag);
    // Learn the real row height once (fonts differ between machines), then lay out again.
    const sample = body.querySelector('tr[data-key]');
    if (sample && sample.offsetHeight > 0 && Math.abs(sample.offsetHeight - state.rowHeight) > 0.5) {
      state.rowHeight = sample.offsetHeight;
      paintKeys();
    }
  }
  function showSaltTable(id) {
    const box = document.querySelector('.salt-table[data-key="' + CSS.escape(id) + '"]');
    if (!box) return;
    box.scrollIntoView({ behavior: 'smooth', block: 'center' });
    box.classList.add('flash');
    setTimeout(() => box.classList.remove('flash'), 1500);
  }
  function renderOperator(pins, denies) {
    const frag = document.createDocumentFragment();
    const add = (kind, entry) => {
      const ref = keyRef(entry);
      const id = keyId(ref);
      const exp = num(entry.expires_at_ms);
      const undo = kind === 'pin' ? 'unpin' : 'allow';
      frag.append(el('tr', { dataset: { key: id, kind } },
        td(kind),
        keyCell(ref),
        td(entry.reason || ''),
        td(entry.by || ''),
        td(kind === 'pin' ? (num(entry.salts) > 0 ? String(entry.salts) : 'auto') : '–', 'num'),
        td(fmtTime(num(entry.created_at_ms))),
        td(exp && exp > 0 ? fmtAgo(exp) : kind === 'pin' ? 'never' : '–', '', exp > 0 ? fmtTime(exp) : undefined),
        el('td', null, el('button', { type: 'button', class: 'link', text: undo + '…', dataset: { undo, key: id } }))));
      if (!state.rowsById.has(id)) state.rowsById.set(id, { item: entry, ref, id });
    };
    for (const p of pins.values()) add('pin', p);
    for (const d of denies.values()) add('deny', d);
    $('operator').tBodies[0].replaceChildren(frag);
    $('operator-empty').hidden = pins.size + denies.size !== 0;
  }
  function renderList() {
    const list = state.list;
    const box = $('salt-tables');
    if (!list) {
      box.replaceChildren(el('p', { class: 'muted', text: 'No hot-key list published for this topic yet.' }));
      $('list-caption').textContent = '';
      $('denied-line').textContent = '';
      return;
    }
    const keys = asArray(list, 'keys');
    $('list-caption').textContent = 'version ' + fmtInt(num(list.version)) + ', ' + keys.length +
      ' salted key' + (keys.length === 1 ? '' : 's') + ', hash ' + (list.hash || '?') + ', separator "' +
      (list.separator ?? '#') + '"';
    const frag = document.createDocumentFragment();
    for (const k of keys) {
      const rate = num(field(k, 'rate'));
      const share = num(field(k, 'share'));
      frag.append(saltTable(k, fmtRate(rate) + '/s, ' + fmtPct(share) + ' of the topic'));
    }
    if (!keys.length) frag.append(el('p', { class: 'muted', text: 'No key is salted right now.' }));
    box.replaceChildren(frag);
    const denied = asArray(list, 'denied').map((d) =>
      printableKey(typeof d === 'string' ? { field: 'key', value: d } : keyRef(d)));
    const prefixes = asArray(list, 'never_salt').map((d) => printableKey(keyRef(d)) + '*');
    $('denied-line').textContent = [
      denied.length ? 'Denied (never salted): ' + denied.join(', ') : '',
      prefixes.length ? 'Never salted by policy: ' + prefixes.join(', ') : '',
    ].filter(Boolean).join(' · ');
  }
  function renderPolicies() {
    const frag = document.createDocumentFragment();
    for (const p of state.policies) {
      const ref = keyRef(p);
      const id = keyId(ref);
      frag.append(el('tr', { dataset: { key: id } },
        keyCell(ref),
        td(policyText(p)),
        td(String(field(p, 'reason', ''))),
        td(String(field(p, 'by', ''))),
        td(fmtTime(num(field(p, 'created_at_ms')))),
        el('td', null, el('button', { type: 'button', class: 'link', text: 'remove…',
          dataset: { removePolicy: id } }))));
    }
    $('policies').tBodies[0].replaceChildren(frag);
    $('policies-empty').hidden = state.policies.length !== 0;
  }
  function renderRejected() {
    const frag = document.createDocumentFragment();
    const rows = asArray(state.detail, 'rejected');
    for (const r of rows) {
      const last = num(field(r, 'last_at_ms'));
      frag.append(el('tr', null,
        td(String(field(r, 'producer', ''))),
        td(String(field(r, 'reason', ''))),
        td(fmtInt(num(field(r, 'count'))), 'num'),
        td(last > 0 ? fmtAgo(last) : '–', '', last > 0 ? fmtTime(last) : undefined),
        td(String(field(r, 'error', '')))));
    }
    $('rejected').tBodies[0].replaceChildren(frag);
    $('rejected-empty').hidden = rows.length !== 0;
  }
  function partitionLoads() {
    const d = state.detail || {};
    const parts = asArray(d, 'partition_load');
    return parts.map((p) => num(p) || 0);
  }
  function renderLoad() {
    const loads = partitionLoads();
    const salted = new Map();
    for (const k of asArray(state.list, 'keys')) {
      for (const s of saltsOf(k)) {
        const names = salted.get(s.partition) || [];
        names.push(printableKey(keyRef(k)) + '#' + s.salt);
        salted.set(s.partition, names);
      }
    }
    const box = $('load-bars');
    if (!loads.length) {
      box.replaceChildren(el('p', { class: 'muted', text: 'No per-partition counts reported yet.' }));
      $('load-caption').textContent = '';
      return;
    }
    const max = Math.max(...loads, 1e-9);
    const sum = loads.reduce((a, b) => a + b, 0);
    const avg = sum / loads.length;
    const frag = document.createDocumentFragment();
    loads.forEach((v, i) => {
      const fill = el('div', { class: 'fill' + (avg > 0 && v / avg > SKEW_WARN ? ' hot' : '') });
      fill.style.width = ((100 * v) / max).toFixed(2) + '%';
      const track = el('div', { class: 'track' }, fill);
      const names = salted.get(i);
      if (names) track.append(el('div', { class: 'salted', title: 'salted traffic: ' + names.join(', ') }));
      frag.append(el('div', { class: 'b', dataset: { partition: i }, title: 'partition ' + i + (names ? '; salts: ' + names.join(', ') : '') },
        el('span', { text: 'p' + i }), track, el('span', { class: 'v', text: (sum > 0 ? fmtPct(v / sum) : '–') + (avg > 0 ? ' ×' + nf2.format(v / avg) : '') })));
    });
    box.replaceChildren(frag);
    $('load-caption').textContent = 'share of the window\'s records per partition (×avg); purple mark: salts land there';
  }
  function renderHistory() {
    const h = state.history.get(state.selected) || [];
    const W = 360, H = 120, pad = 14;
    const root = $('history');
    root.replaceChildren();
    if (h.length < 2) {
      const t = svg('text', { x: 8, y: 20 });
      t.textContent = 'collecting…';
      root.append(t);
      $('history-caption').textContent = '';
      return;
    }
    const skews = h.map((p) => p.skew ?? 0);
    const hots = h.map((p) => p.hot ?? 0);
    const maxSkew = Math.max(SKEW_WARN * 1.2, ...skews);
    const maxHot = Math.max(1, ...hots);
    // Time runs left to right over what has been collected (at most HISTORY_POINTS polls).
    const x = (i) => pad + ((W - 2 * pad) * i) / (h.length - 1);
    const ys = (v) => H - pad - ((H - 2 * pad) * v) / maxSkew;
    const yh = (v) => H - pad - ((H - 2 * pad) * v) / maxHot;
    const line = (vals, y) => vals.map((v, i) => (i ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1)).join(' ');
    root.append(svg('line', { x1: pad, x2: W - pad, y1: ys(SKEW_WARN), y2: ys(SKEW_WARN), class: 'threshold' }));
    const lbl = svg('text', { x: 2, y: ys(SKEW_WARN) - 2 });
    lbl.textContent = SKEW_WARN.toFixed(1);
    root.append(lbl);
    const top = svg('text', { x: W - pad, y: 10, 'text-anchor': 'end' });
    top.textContent = 'skew ' + maxSkew.toFixed(1) + ' · ' + maxHot + ' keys';
    root.append(top);
    root.append(svg('path', { d: line(skews, ys), class: 'skew' }));
    root.append(svg('path', { d: line(hots, yh), class: 'hot' }));
    const last = h[h.length - 1];
    $('history-caption').textContent = 'last ' + Math.round((last.t - h[0].t) / 1000) + ' s: skew now ' +
      fmtSkew(last.skew) + ' (peak ' + fmtSkew(Math.max(...skews)) + '), ' + (last.hot ?? 0) + ' hot keys (peak ' + maxHot + ')';
  }
  function renderTopic() {
    const d = state.detail;
    const t = state.selected;
    $('topic-title').textContent = t;
    if (d) {
      const r = topicRow(d);
      const skew = r.skew;
      const summary = $('topic-summary');
      summary.replaceChildren(
        el('span', { text: fmtRate(r.rate) + ' msg/s · ' + fmtInt(r.partitions) + ' partitions · ' + fmtInt(r.producers) + ' producers · version ' + fmtInt(r.version) + ' · skew ' }),
        el('span', { class: skew !== null && skew > SKEW_WARN ? 'warn' : '', text: fmtSkew(skew) }),
        el('span', { text: ' · idle ' + fmtPct(r.idle) }));
    }
    renderKeys();
    renderList();
    renderPolicies();
    renderRejected();
    renderLoad();
    renderHistory();
  }

  // ---- audit ----
  function auditDetail(e) {
    const d = field(e, 'detail');
    if (d === undefined || d === null || d === '') return '';
    if (typeof d === 'string') return d;
    return JSON.stringify(d);
  }
  async function refreshAudit() {
    if (!token.get()) {
      // The audit log is an operator read: without a token there is nothing to ask for.
      $('audit-state').textContent = 'enter the operator token to read the audit log';
      return;
    }
    const r = await api('GET', 'v1/audit?limit=200');
    if (!r.ok) {
      $('audit-state').textContent = r.status === 401 || r.status === 403
        ? 'enter the operator token to read the audit log'
        : 'could not load: ' + (field(r.body, 'error', r.text) || r.status);
      return;
    }
    const entries = asArray(r.body, 'entries');
    const sig = JSON.stringify(entries);
    $('audit-state').textContent = entries.length + ' entries, newest first';
    if (sig === state.auditSig) return;
    state.auditSig = sig;
    const frag = document.createDocumentFragment();
    for (const e of entries) {
      const ref = keyRef(e);
      const at = num(field(e, 'at_ms'));
      frag.append(el('tr', null,
        td(fmtTime(at), '', at ? fmtAgo(at) : undefined),
        td(String(field(e, 'who', ''))),
        td(String(field(e, 'action', ''))),
        td(String(field(e, 'topic', ''))),
        keyCell(ref),
        td(fmtInt(num(field(e, 'version'))), 'num'),
        td(auditDetail(e), 'detail')));
    }
    $('audit').tBodies[0].replaceChildren(frag);
  }

  // ---- actions ----
  function parseTtl(text) {
    const t = text.trim();
    if (!t) return undefined;
    const m = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)?$/i.exec(t);
    if (!m) throw new Error('TTL must look like 90s, 30m, 2h or 1d');
    const mult = { s: 1, m: 60, h: 3600, d: 86400 }[(m[2] || 's').toLowerCase()];
    const secs = Math.round(parseFloat(m[1]) * mult);
    if (secs <= 0) throw new Error('TTL must be positive');
    return secs;
  }
  function confirmDialog(title, text, body) {
    return new Promise((resolve) => {
      const dlg = $('confirm');
      $('confirm-title').textContent = title;
      $('confirm-text').textContent = text;
      $('confirm-body').textContent = body;
      dlg.returnValue = '';
      dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
      dlg.showModal();
      $('confirm-ok').focus();
    });
  }
  function showAnswer(kind, head, body) {
    const box = $('answer');
    box.hidden = false;
    box.className = 'answer ' + kind;
    $('answer-head').textContent = head;
    $('answer-body').textContent = body || '';
  }
  async function doAction(action) {
    const topic = state.selected;
    if (!topic) return;
    const keyText = $('act-key').value;
    const isB64 = $('act-b64').checked;
    if (!keyText) return showAnswer('error', 'Enter a key first.', '');
    if (isB64 && !b64ToBytes(keyText)) return showAnswer('error', 'The key is not valid base64.', '');
    const ref = { field: isB64 ? 'key_b64' : 'key', value: keyText };
    const reason = $('act-reason').value.trim();
    let method, path, body;
    const q = '?' + ref.field + '=' + encodeURIComponent(ref.value);
    try {
      if (action === 'pin') {
        if (!reason) return showAnswer('error', 'A reason is required to pin a key.', '');
        body = { [ref.field]: ref.value, reason };
        const salts = $('act-salts').value.trim();
        if (salts) {
          const n = Number(salts);
          if (!Number.isInteger(n) || n < 1) return showAnswer('error', 'Salts must be a whole number ≥ 1.', '');
          body.salts = n;
        }
        const ttl = parseTtl($('act-ttl').value);
        if (ttl !== undefined) body.ttl_s = ttl;
        method = 'POST'; path = topicPath(topic) + '/pins';
      } else if (action === 'unpin') {
        method = 'DELETE'; path = topicPath(topic) + '/pins' + q;
      } else if (action === 'deny') {
        if (!reason) return showAnswer('error', 'A reason is required to deny a key.', '');
        body = { [ref.field]: ref.value, reason };
        method = 'POST'; path = topicPath(topic) + '/denies';
      } else if (action === 'allow') {
        method = 'DELETE'; path = topicPath(topic) + '/denies' + q;
      } else {
        return;
      }
    } catch (e) {
      return showAnswer('error', e.message, '');
    }
    if (!token.get()) {
      $('token-input').focus();
      return showAnswer('error', 'Enter the operator token (top right) first.', '');
    }
    const verb = { pin: 'Pin (force salting of)', unpin: 'Unpin', deny: 'Deny (never salt)', allow: 'Allow again' }[action];
    const ok = await confirmDialog(verb + ' this key?',
      verb + ' key "' + printableKey(ref) + '" on topic "' + topic + '".',
      method + ' /' + path + (body ? '\n' + JSON.stringify(body, null, 2) : ''));
    if (!ok) return showAnswer('', 'Cancelled; nothing was sent.', '');
    const r = await api(method, path, body);
    const text = r.body ? JSON.stringify(r.body, null, 2) : r.text;
    if (r.ok) {
      showAnswer('ok', 'Done: ' + action + ' accepted (HTTP ' + r.status + ')', text);
      showTokenState();
    } else if (r.status === 401 || r.status === 403) {
      showAnswer('error', 'Refused (HTTP ' + r.status + '): the operator token was not accepted', text);
      showTokenState('token refused by the coordinator');
    } else if (r.status === 0) {
      showAnswer('error', 'The coordinator is unreachable', text);
    } else {
      showAnswer('error', 'Refused (HTTP ' + r.status + '): ' + field(r.body, 'error', 'error'), text);
    }
    await Promise.all([refreshAudit(), pollTopic(true)]);
  }
  function showPolicyAnswer(kind, head, body) {
    const box = $('policy-answer');
    box.hidden = false;
    box.className = 'answer ' + kind;
    $('policy-answer-head').textContent = head;
    $('policy-answer-body').textContent = body || '';
  }
  // Adds (or replaces) the policy the form describes, or removes the one of `removeRef`.
  async function doPolicy(removeRef) {
    const topic = state.selected;
    if (!topic) return;
    let method, path, body, ref, verb;
    if (removeRef) {
      ref = removeRef;
      method = 'DELETE';
      path = topicPath(topic) + '/policies?' + ref.field + '=' + encodeURIComponent(ref.value);
      verb = 'Remove the policy of';
    } else {
      const text = $('pol-prefix').value;
      const isB64 = $('pol-b64').checked;
      if (!text) return showPolicyAnswer('error', 'Enter a prefix first.', '');
      if (isB64 && !b64ToBytes(text)) return showPolicyAnswer('error', 'The prefix is not valid base64.', '');
      ref = { field: isB64 ? 'key_b64' : 'key', value: text };
      const reason = $('pol-reason').value.trim();
      if (!reason) return showPolicyAnswer('error', 'A reason is required (it goes into the audit log).', '');
      body = { [ref.field]: ref.value, reason };
      const hot = $('pol-hot').value.trim();
      const salts = $('pol-salts').value.trim();
      if ($('pol-never').checked) {
        if (hot || salts) {
          return showPolicyAnswer('error', 'A never-salt policy takes no hot_fraction or max salts.', '');
        }
        body.never_salt = true;
      } else {
        if (!hot && !salts) {
          return showPolicyAnswer('error', 'Tick "never salt", or give hot_fraction and/or max salts.', '');
        }
        if (hot) {
          const f = Number(hot);
          if (!(f > 0) || f > 1000) return showPolicyAnswer('error', 'hot_fraction must be above 0 and at most 1000.', '');
          body.hot_fraction = f;
        }
        if (salts) {
          const m = Number(salts);
          if (!Number.isInteger(m) || m < 1) return showPolicyAnswer('error', 'Max salts must be a whole number ≥ 1.', '');
          body.max_salts = m;
        }
      }
      method = 'POST';
      path = topicPath(topic) + '/policies';
      verb = 'Set the policy of';
    }
    if (!token.get()) {
      $('token-input').focus();
      return showPolicyAnswer('error', 'Enter the operator token (top right) first.', '');
    }
    const ok = await confirmDialog(verb + ' this prefix?',
      verb + ' prefix "' + printableKey(ref) + '" on topic "' + topic + '".',
      method + ' /' + path + (body ? '\n' + JSON.stringify(body, null, 2) : ''));
    if (!ok) return showPolicyAnswer('', 'Cancelled; nothing was sent.', '');
    const r = await api(method, path, body);
    const text = r.body ? JSON.stringify(r.body, null, 2) : r.text;
    if (r.ok) {
      showPolicyAnswer('ok', 'Done: policy ' + (removeRef ? 'removed' : 'set') + ' (HTTP ' + r.status + ')', text);
      showTokenState();
    } else if (r.status === 401 || r.status === 403) {
      showPolicyAnswer('error', 'Refused (HTTP ' + r.status + '): the operator token was not accepted', text);
      showTokenState('token refused by the coordinator');
    } else if (r.status === 0) {
      showPolicyAnswer('error', 'The coordinator is unreachable', text);
    } else {
      showPolicyAnswer('error', 'Refused (HTTP ' + r.status + '): ' + field(r.body, 'error', 'error'), text);
    }
    await Promise.all([refreshAudit(), pollTopic(true)]);
  }
  function prefill(id) {
    const row = state.rowsById && state.rowsById.get(id);
    if (!row) return;
    $('act-key').value = row.ref.value;
    $('act-b64').checked = row.ref.field === 'key_b64';
    $('actions').scrollIntoView({ behavior: 'smooth', block: 'center' });
    $('act-reason').focus();
  }

  // ---- polling ----
  function setConn(kind, text) {
    const c = $('conn');
    c.dataset.state = kind;
    c.textContent = text;
  }
  async function pollTopics() {
    const r = await api('GET', 'v1/topics');
    if (!r.ok) {
      setConn('error', r.status === 0 ? 'coordinator unreachable'
        : r.status === 401 ? 'reads need a token: enter the operator token'
          : 'topics: HTTP ' + r.status);
      return false;
    }
    setConn('ok', 'live · ' + new Date().toLocaleTimeString());
    state.topics = asArray(r.body, 'topics').map(topicRow);
    for (const t of state.topics) {
      if (t.topic !== state.selected) recordHistory(t.topic, t.skew, t.hot);
    }
    const sig = JSON.stringify(state.topics);
    if (sig !== state.topicsSig) {
      state.topicsSig = sig;
      renderTopics();
    }
    return true;
  }
  async function pollTopic(force) {
    const t = state.selected;
    if (!t) return;
    const n = $('top-n').value;
    const [d, top, list, pol] = await Promise.all([
      api('GET', topicPath(t)),
      api('GET', topicPath(t) + '/top?n=' + encodeURIComponent(n)),
      api('GET', 'v1/hotkeys?topic=' + encodeURIComponent(t)),
      api('GET', topicPath(t) + '/policies'),
    ]);
    if (t !== state.selected) return;  // the operator moved on meanwhile
    if (d.status === 404) {
      $('topic-summary').textContent = 'unknown topic (no reports yet)';
    }
    state.detail = d.ok ? d.body : null;
    state.top = top.ok ? asArray(top.body, 'items') : [];
    state.list = list.ok && list.body ? list.body : null;
    state.policies = pol.ok ? asArray(pol.body, 'policies') : [];
    const detailRow = state.detail ? topicRow(state.detail) : null;
    const hotCount = state.list ? asArray(state.list, 'keys').length : detailRow && detailRow.hot;
    recordHistory(t, detailRow ? detailRow.skew : null, hotCount ?? 0);
    const sig = JSON.stringify([state.detail, state.top, state.list, state.policies, n]);
    if (force || sig !== state.renderSig) {
      state.renderSig = sig;
      renderTopic();
    } else {
      renderHistory();
    }
  }
  let timer = null;
  async function tick() {
    timer = null;
    try {
      if (await pollTopics()) {
        await pollTopic(false);
        if (state.polls % AUDIT_EVERY === 0) await refreshAudit();
      }
      state.polls++;
    } finally {
      schedule();
    }
  }
  function schedule() {
    if (timer === null) timer = setTimeout(tick, document.hidden ? POLL_MS * 4 : POLL_MS);
  }

  // ---- routing ----
  function route() {
    const m = /^#\/topic\/(.+)$/.exec(location.hash);
    const t = m ? decodeURIComponent(m[1]) : null;
    if (t === state.selected) return;
    state.selected = t;
    state.detail = null;
    state.top = [];
    state.list = null;
    state.renderSig = '';
    $('topic').hidden = !t;
    $('keys-scroll').scrollTop = 0;
    $('answer').hidden = true;
    renderTopics();
    if (t) {
      renderTopic();
      pollTopic(true);
    }
  }

  // ---- wiring ----
  function init() {
    showTokenState();
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const v = $('token-input').value.trim();
      token.set(v);
      $('token-input').value = '';
      showTokenState();
      refreshAudit();
    });
    $('token-forget').addEventListener('click', () => {
      token.set('');
      showTokenState();
    });
    $('topics').tBodies[0].addEventListener('click', (ev) => {
      const tr = ev.target.closest('tr[data-topic]');
      if (tr) location.hash = '#/topic/' + encodeURIComponent(tr.dataset.topic);
    });
    $('topics').tHead.addEventListener('click', (ev) => {
      const th = ev.target.closest('th[data-sort]');
      if (!th) return;
      const k = th.dataset.sort;
      state.sort = { key: k, dir: state.sort.key === k && state.sort.dir === 'desc' ? 'asc' : 'desc' };
      renderTopics();
    });
    $('topic-filter').addEventListener('input', renderTopics);
    $('key-filter').addEventListener('input', renderKeys);
    $('top-n').addEventListener('change', () => pollTopic(true));
    let painting = false;
    $('keys-scroll').addEventListener('scroll', () => {
      if (painting) return;
      painting = true;
      requestAnimationFrame(() => {
        painting = false;
        paintKeys();
      });
    }, { passive: true });
    $('keys').tBodies[0].addEventListener('click', (ev) => {
      const b = ev.target.closest('button');
      if (!b) return;
      if (b.dataset.salts) {
        showSaltTable(b.dataset.salts);
      } else if (b.dataset.act) {
        prefill(b.dataset.act);
      }
    });
    $('operator').tBodies[0].addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-undo]');
      if (!b) return;
      prefill(b.dataset.key);
      doAction(b.dataset.undo);
    });
    $('policies').tBodies[0].addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-remove-policy]');
      if (!b) return;
      const p = state.policies.find((x) => keyId(keyRef(x)) === b.dataset.removePolicy);
      if (p) doPolicy(keyRef(p));
    });
    $('pol-add').addEventListener('click', () => doPolicy(null));
    $('policy-form').addEventListener('submit', (ev) => ev.preventDefault());
    for (const b of document.querySelectorAll('#action-form button[data-action]')) {
      b.addEventListener('click', () => doAction(b.dataset.action));
    }
    $('action-form').addEventListener('submit', (ev) => ev.preventDefault());
    $('audit-refresh').addEventListener('click', refreshAudit);
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && timer !== null) {
        clearTimeout(timer);
        timer = null;
        tick();
      }
    });
    window.addEventListener('hashchange', route);
    route();
    tick();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
