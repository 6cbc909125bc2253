// Development harness for the rastro tracker (dist/tracker.js) in a real Chromium.
//
//   node tracker/test/harness.mjs        (or: npm test --prefix tracker)
//
// A loopback HTTP server serves test pages that embed the built tracker and records every
// POST /rastro/events. Each check prints PASS / FAIL / SKIP; any FAIL exits 1.
// Env: CHROMIUM (default /usr/bin/chromium). Needs `npm ci --prefix tracker` and a built dist.
//
// Checks (rule in brackets):
//   load       one pageview on load, fetch as text/plain, v_ visitorId stored  [TRK-05, TRK-07, TRK-09]
//   spa        pushState to a new path: one pageview; same path / query / fragment: none [TRK-05]
//   popstate   history.back() to another path: one pageview                   [TRK-05]
//   vitals     hard-load vitals carry lcp/fcp/ttfb; after an SPA navigation only cls/inp [TRK-10]
//   track      rastro.track('x', {a: 1}) sends an event                          [§3.2]
//   identify   identify / reset change the next batch's visitorId; only rastro_vid stored [TRK-07, TRK-08]
//   hide       visibilitychange:hidden and pagehide flush with sendBeacon as text/plain, with
//              engagement counting visible time only                           [TRK-09]
//   ids        every pageviewId fresh; engagement/vitals name an earlier pageview [TRK-10]
//   cookieless data-cookieless: nothing stored, rastro_vid deleted, no visitorId  [TRK-07]
//   answer     an answer with cookieless:true switches to cookieless            [TRK-07]
//   ignore / webdriver / file   send nothing                                    [TRK-06]
//   bot        window.Cypress sets bot:true                                     [§3.2]
//   limits     batches of <= 50 events and <= 64 KiB, nothing lost             [TRK-09]
//   hash       data-hash: route fragments are paths, hash:true                  [§3.4]
//   bfcache    a bfcache restore sends a new pageview                           [TRK-05]
//   prerender  a prerendered page sends its pageview only after activation (simulated) [TRK-06]
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.join(here, '..', 'dist', 'tracker.js');
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
const ID = /^[vp]_[A-Za-z0-9_-]{22}$/;

/* ---------------- server ---------------- */

let records = [];        // one per POST /rastro/events
let answerCookieless = false;

const page = (mode) => `<!doctype html><html><head><meta charset="utf-8"><title>rastro test</title>
<script>addEventListener('pageshow', (e) => { window.__persisted = e.persisted; });</script>
<script defer src="/rastro/tracker.js" data-site-id="loja-y"${mode.includes('ck') ? ' data-cookieless' : ''}${mode.includes('hash') ? ' data-hash' : ''}></script>
</head><body><h1>rastro tracker test page</h1>
<p style="font-size:20px">A paragraph of text large enough to be the largest contentful paint of this page.</p>
<button id="slow" onclick="const t = performance.now(); while (performance.now() - t < 150) {}">slow</button></body></html>`;

const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (req.method === 'POST' && u.pathname === '/rastro/events') {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let json = null;
      try { json = JSON.parse(body); } catch (e) {}
      records.push({ body, json, bytes: Buffer.byteLength(body), type: req.headers['content-type'], mode: req.headers['sec-fetch-mode'] });
      const n = json && Array.isArray(json.events) ? json.events.length : 0;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Access-Control-Allow-Origin': '*' });
      res.end(JSON.stringify({ accepted: n, rejected: 0, bot: 0, cookieless: answerCookieless, visitorId: (json && json.visitorId) || null, sessionId: 's_x' }));
    });
    return;
  }
  if (u.pathname === '/rastro/tracker.js') {
    res.writeHead(200, { 'Content-Type': 'application/javascript; charset=utf-8', 'Access-Control-Allow-Origin': '*' });
    return res.end(fs.readFileSync(DIST));
  }
  if (u.pathname === '/favicon.ico') { res.writeHead(404); return res.end(); }
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  if (u.pathname === '/blank') return res.end('<!doctype html><title>blank</title>blank');
  res.end(page(u.searchParams.get('v') || ''));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const ORIGIN = `http://127.0.0.1:${server.address().port}`;

/* ---------------- helpers ---------------- */

const results = [];
const check = (name, ok, detail = '') => {
  results.push({ name, ok });
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}${detail ? `  (${detail})` : ''}`);
};
const skip = (name, why) => { results.push({ name, ok: true, skipped: true }); console.log(`SKIP  ${name}  (${why})`); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (pred, ms = 5000) => {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (pred()) return true;
  return pred();
};
const events = (from = 0) => records.slice(from).flatMap((r) => (r.json ? r.json.events.map((e) => ({ ...e, batch: r })) : []));
const ofType = (t, from) => events(from).filter((e) => e.type === t);
const QUIET = 1600; // > the tracker's 1 s flush delay

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-blink-features=AutomationControlled', `--user-agent=${UA}`],
  ignoreDefaultArgs: ['--disable-back-forward-cache'], // for the bfcache check
});
const fresh = async (init) => {
  await sleep(500); // a closed page's last beacon must not land in the next check
  records = [];
  const context = await browser.newContext();
  if (init) await context.addInitScript(init);
  return { context, page: await context.newPage() };
};
const storage = (p) => p.evaluate(() => Object.fromEntries(Object.entries(localStorage)));
const allBatches = [];
const keep = () => allBatches.push(...records);

try {
  /* ---------------- main flow: load, SPA, vitals, track, identify, hide ---------------- */
  {
    const { context, page: p } = await fresh();
    await p.goto(`${ORIGIN}/p/a`, { referer: 'https://ref.example/x' });
    await waitFor(() => ofType('pageview').length >= 1);
    await sleep(QUIET);
    const pv = ofType('pageview');
    const first = records[0];
    check('load: exactly one pageview', pv.length === 1, `${pv.length}`);
    check('load: pageview url, referrer and fresh p_ id',
      pv[0] && pv[0].url === `${ORIGIN}/p/a` && pv[0].referrer === 'https://ref.example/x' && ID.test(pv[0].pageviewId) && Number.isInteger(pv[0].ts));
    check('load: sent with fetch as text/plain', first && first.mode === 'cors' && /^text\/plain/.test(first.type), `${first && first.mode} ${first && first.type}`);
    const vid = first && first.json.visitorId;
    check('load: batch shape (siteId, v_ visitorId, sentAt, language, no hash/bot)',
      first && first.json.siteId === 'loja-y' && /^v_/.test(vid) && ID.test(vid) && Number.isInteger(first.json.sentAt) &&
      typeof first.json.language === 'string' && !('hash' in first.json) && !('bot' in first.json), JSON.stringify(first && { ...first.json, events: undefined }));
    check('load: navigator.webdriver is hidden', (await p.evaluate(() => navigator.webdriver)) === false);
    check('load: rastro_vid stored and equal to the batch visitorId', (await storage(p)).rastro_vid === vid);

    // SPA: interact (INP on the hard view), then pushState to a new path.
    await p.click('#slow');
    await sleep(300); // the event timing entry arrives after the next paint
    let mark = records.length;
    await p.evaluate(() => history.pushState({}, '', '/p/b'));
    await waitFor(() => ofType('pageview', mark).length >= 1);
    await sleep(QUIET);
    let ev = events(mark);
    const pv1 = pv[0].pageviewId, pv2 = ofType('pageview', mark)[0];
    check('spa: pushState to a new path sends one pageview', ofType('pageview', mark).length === 1 && pv2.url === `${ORIGIN}/p/b` && !('referrer' in pv2));
    check('spa: the view left gets engagement and vitals before the new pageview',
      ev.length === 3 && ev[0].type === 'engagement' && ev[0].pageviewId === pv1 && ev[1].type === 'vitals' && ev[1].pageviewId === pv1 && ev[2].type === 'pageview',
      ev.map((e) => e.type).join(','));
    const hardVitals = ev.find((e) => e.type === 'vitals') || {};
    check('vitals: hard-load vitals carry integer fcp, ttfb, lcp, inp and a cls number',
      ['fcp', 'ttfb', 'lcp', 'inp'].every((k) => Number.isInteger(hardVitals[k])) && typeof hardVitals.cls === 'number',
      JSON.stringify({ lcp: hardVitals.lcp, fcp: hardVitals.fcp, ttfb: hardVitals.ttfb, inp: hardVitals.inp, cls: hardVitals.cls }));

    mark = records.length;
    await p.evaluate(() => {
      history.pushState({}, '', '/p/b?x=1');
      history.replaceState({}, '', '/p/b#frag');
      location.hash = '#/not-a-route-without-data-hash';
    });
    await sleep(QUIET);
    check('spa: same path (pushState with query, replaceState, hash change) sends nothing', events(mark).length === 0, `${events(mark).length} events`);

    await p.click('#slow');
    await sleep(300);
    mark = records.length;
    await p.evaluate(() => history.pushState({}, '', '/p/c'));
    await waitFor(() => ofType('pageview', mark).length >= 1);
    await sleep(QUIET);
    const softVitals = ofType('vitals', mark)[0] || {};
    const softKeys = Object.keys(softVitals).filter((k) => !['type', 'ts', 'pageviewId', 'batch'].includes(k));
    check('vitals: after an SPA navigation only cls and inp', softVitals.pageviewId === pv2.pageviewId &&
      softKeys.length > 0 && softKeys.every((k) => k === 'cls' || k === 'inp') && Number.isInteger(softVitals.inp), JSON.stringify(softKeys));

    mark = records.length;
    await p.evaluate(() => history.back());
    await waitFor(() => ofType('pageview', mark).length >= 1);
    await sleep(QUIET);
    check('popstate: history.back() to another path sends one pageview',
      ofType('pageview', mark).length === 1 && ofType('pageview', mark)[0].url.startsWith(`${ORIGIN}/p/b`));

    mark = records.length;
    await p.evaluate(() => rastro.track('x', { a: 1 }));
    await waitFor(() => ofType('event', mark).length >= 1);
    const tev = ofType('event', mark)[0];
    check('track: rastro.track sends an event with url, name, properties',
      tev && tev.name === 'x' && JSON.stringify(tev.properties) === '{"a":1}' && tev.url === (await p.evaluate(() => location.href)) && Number.isInteger(tev.ts));

    // identify / reset
    await sleep(QUIET);
    await p.evaluate(() => { rastro.identify('u_testuser01'); rastro.track('after_identify'); });
    await waitFor(() => events().some((e) => e.name === 'after_identify'));
    const idBatch = events().find((e) => e.name === 'after_identify').batch;
    check('identify: the next batch carries the given visitorId', idBatch.json.visitorId === 'u_testuser01' && (await storage(p)).rastro_vid === 'u_testuser01');
    await p.evaluate(() => { rastro.reset(); rastro.track('after_reset'); });
    await waitFor(() => events().some((e) => e.name === 'after_reset'));
    const rvid = events().find((e) => e.name === 'after_reset').batch.json.visitorId;
    check('reset: the next batch carries a new random v_ id', /^v_/.test(rvid) && ID.test(rvid) && rvid !== vid && (await storage(p)).rastro_vid === rvid, rvid);
    check('storage: rastro_vid is the only key written', JSON.stringify(Object.keys(await storage(p))) === '["rastro_vid"]');

    // Hide without unloading (headless tabs never get hidden, so the state is simulated), 1 s hidden.
    await sleep(QUIET);
    const setVis = (state) => p.evaluate((s) => {
      Object.defineProperty(document, 'visibilityState', { value: s, configurable: true });
      Object.defineProperty(document, 'hidden', { value: s === 'hidden', configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    }, state);
    const lastPv = ofType('pageview').at(-1);
    const shownAt = lastPv.ts;
    mark = records.length;
    await setVis('hidden');
    const hiddenAt = Date.now();
    await waitFor(() => ofType('engagement', mark).length >= 1, 2000);
    const hb = records[mark];
    const e1 = ofType('engagement', mark)[0];
    check('hide: visibilitychange:hidden flushes at once with sendBeacon as text/plain',
      hb && hb.mode === 'no-cors' && /^text\/plain/.test(hb.type), `${hb && hb.mode} ${hb && hb.type}`);
    check('hide: engagement names the current view, engagedMs = visible time',
      e1 && e1.pageviewId === lastPv.pageviewId && Math.abs(e1.engagedMs - (hiddenAt - shownAt)) < 600, `${e1 && e1.engagedMs} vs ~${hiddenAt - shownAt}`);
    await sleep(1000);
    await setVis('visible');
    await sleep(500);
    mark = records.length;
    const t0 = Date.now();
    await p.goto(`${ORIGIN}/blank`); // pagehide
    await waitFor(() => ofType('engagement', mark).length >= 1, 3000);
    const ub = records[mark];
    const e2 = ofType('engagement', mark)[0];
    const expect = e1 ? e1.engagedMs + (t0 - hiddenAt) - 1000 : 0;
    check('hide: pagehide flushes with sendBeacon as text/plain', ub && ub.mode === 'no-cors' && /^text\/plain/.test(ub.type), `${ub && ub.mode} ${ub && ub.type}`);
    check('hide: engagement is cumulative and excludes hidden time',
      e2 && e1 && e2.pageviewId === e1.pageviewId && e2.engagedMs > e1.engagedMs && Math.abs(e2.engagedMs - expect) < 700, `${e2 && e2.engagedMs} vs ~${expect}`);

    const all = events();
    const pvIds = all.filter((e) => e.type === 'pageview').map((e) => e.pageviewId);
    const named = all.every((e, i) => !['engagement', 'vitals'].includes(e.type) ||
      all.slice(0, i).some((x) => x.type === 'pageview' && x.pageviewId === e.pageviewId));
    check('ids: every pageviewId is fresh and well formed', new Set(pvIds).size === pvIds.length && pvIds.every((x) => ID.test(x) && x.startsWith('p_')), `${pvIds.length} pageviews`);
    check('ids: every engagement/vitals names an earlier pageview', named);
    keep();
    await context.close();
  }

  /* ---------------- data-cookieless ---------------- */
  {
    const { context, page: p } = await fresh();
    await p.goto(`${ORIGIN}/blank`);
    await p.evaluate(() => localStorage.setItem('rastro_vid', 'v_preexistingidxxxxxxxxx'));
    await p.goto(`${ORIGIN}/p/ck?v=ck`);
    await waitFor(() => ofType('pageview').length >= 1);
    await p.evaluate(() => { rastro.identify('u_testuser01'); rastro.track('ck'); rastro.reset(); });
    await sleep(QUIET);
    const st = await storage(p);
    await p.goto(`${ORIGIN}/blank`);
    await waitFor(() => ofType('engagement').length >= 1, 3000);
    check('cookieless: pageview, event and engagement sent', ofType('pageview').length === 1 && ofType('event').length === 1 && ofType('engagement').length === 1);
    check('cookieless: no batch carries visitorId', records.length > 0 && records.every((r) => !('visitorId' in r.json)));
    check('cookieless: storage empty (rastro_vid deleted, identify/reset no-ops)', Object.keys(st).length === 0, JSON.stringify(st));
    keep();
    await context.close();
  }

  /* ---------------- server answer cookieless: true ---------------- */
  {
    const { context, page: p } = await fresh();
    answerCookieless = true;
    await p.goto(`${ORIGIN}/p/a`);
    await waitFor(() => records.length >= 1);
    await sleep(300);
    await p.evaluate(() => { rastro.identify('u_testuser01'); rastro.track('after_answer'); });
    await waitFor(() => records.length >= 2);
    answerCookieless = false;
    const st = await storage(p);
    check('answer: first batch has a visitorId, later ones none after cookieless:true',
      records.length >= 2 && 'visitorId' in records[0].json && records.slice(1).every((r) => !('visitorId' in r.json)));
    check('answer: rastro_vid deleted, identify a no-op', Object.keys(st).length === 0, JSON.stringify(st));
    keep();
    await context.close();
  }

  /* ---------------- skips ---------------- */
  const silent = async (name, init, url, before) => {
    const { context, page: p } = await fresh(init);
    if (before) await before(p);
    await p.goto(url);
    await p.evaluate(() => {
      history.pushState({}, '', location.pathname + 'x');
      window.rastro && rastro.track('x');
    }).catch(() => {});
    await sleep(QUIET);
    await p.goto(`${ORIGIN}/blank`);
    await sleep(500);
    check(name, records.length === 0, `${records.length} batches`);
    await context.close();
  };
  await silent('ignore: rastro_ignore = "true" sends nothing', null, `${ORIGIN}/p/a`, async (p) => {
    await p.goto(`${ORIGIN}/blank`);
    await p.evaluate(() => localStorage.setItem('rastro_ignore', 'true'));
  });
  await silent('webdriver: navigator.webdriver sends nothing',
    () => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => true }), `${ORIGIN}/p/a`);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rastro-')), 'page.html');
  fs.writeFileSync(file, `<!doctype html><p>file page</p><script defer src="${ORIGIN}/rastro/tracker.js" data-site-id="loja-y"></script>`);
  await silent('file: a non-http(s) page sends nothing', null, `file://${file}`);

  /* ---------------- bot marker ---------------- */
  {
    const { context, page: p } = await fresh(() => { window.Cypress = {}; });
    await p.goto(`${ORIGIN}/p/a`);
    await waitFor(() => records.length >= 1);
    check('bot: window.Cypress sets bot: true', records[0] && records[0].json.bot === true);
    await context.close();
  }

  /* ---------------- batch limits ---------------- */
  {
    const { context, page: p } = await fresh();
    await p.goto(`${ORIGIN}/p/a`);
    await waitFor(() => records.length >= 1);
    await p.evaluate(() => {
      for (let i = 0; i < 120; i++) rastro.track('many', { i });
      for (let i = 0; i < 4; i++) rastro.track('big', { blob: 'x'.repeat(30000) });
    });
    await waitFor(() => ofType('event').length >= 124);
    await p.evaluate(() => { for (let i = 0; i < 120; i++) rastro.track('unload', { i }); });
    await p.goto(`${ORIGIN}/blank`);
    await waitFor(() => events().filter((e) => e.name === 'unload').length >= 120, 3000);
    const over = records.filter((r) => r.json.events.length > 50 || r.bytes > 65536);
    check('limits: 244 queued events all arrive (fetch and sendBeacon)', ofType('event').length === 244, `${ofType('event').length}`);
    check('limits: no batch over 50 events or 64 KiB', over.length === 0, records.map((r) => `${r.json.events.length}/${r.bytes}B`).join(' '));
    keep();
    await context.close();
  }

  /* ---------------- hash mode ---------------- */
  {
    const { context, page: p } = await fresh();
    await p.goto(`${ORIGIN}/p/h?v=hash`);
    await waitFor(() => records.length >= 1);
    const step = async (hash) => {
      const mark = records.length;
      await p.evaluate((h) => { location.hash = h; }, hash);
      await sleep(QUIET);
      return ofType('pageview', mark).length;
    };
    const n = [await step('#/a'), await step('#/a?x=1'), await step('#/a&y=2'), await step('#!/b'), await step('#access_token=zzz')];
    check('hash: #/a, #/a?x=1, #/a&y=2, #!/b, #access_token → 1,0,0,1,1 pageviews', JSON.stringify(n) === '[1,0,0,1,1]', JSON.stringify(n));
    check('hash: batches carry hash: true', records.every((r) => r.json.hash === true));
    keep();
    await context.close();
  }

  /* ---------------- bfcache restore ---------------- */
  {
    const { context, page: p } = await fresh();
    await p.goto(`${ORIGIN}/p/bf`);
    await waitFor(() => ofType('pageview').length >= 1);
    await sleep(QUIET);
    await p.goto(`${ORIGIN}/blank`);
    await sleep(300);
    const mark = records.length;
    await p.goBack({ waitUntil: 'commit' });
    await sleep(500);
    const persisted = await p.evaluate(() => window.__persisted);
    if (!persisted) skip('bfcache: restore sends a new pageview', 'the page was not restored from bfcache');
    else {
      await waitFor(() => ofType('pageview', mark).length >= 1);
      await sleep(QUIET);
      const pv = ofType('pageview', mark);
      check('bfcache: restore sends one new pageview with a new id', pv.length === 1 && pv[0].url === `${ORIGIN}/p/bf` &&
        pv[0].pageviewId !== ofType('pageview')[0].pageviewId && !('referrer' in pv[0]));
    }
    keep();
    await context.close();
  }

  /* ---------------- prerender ---------------- */
  // Chromium refuses real prerendering while a DevTools client without tab-target support is
  // attached (Playwright: PrerenderingDisabledByDevTools), so document.prerendering and the
  // prerenderingchange event are simulated here.
  {
    const { context, page: p } = await fresh(() => {
      let prerendering = true;
      Object.defineProperty(Document.prototype, 'prerendering', { get: () => prerendering, configurable: true });
      window.__activate = () => { prerendering = false; document.dispatchEvent(new Event('prerenderingchange')); };
    });
    await p.goto(`${ORIGIN}/p/pre`);
    await p.evaluate(() => rastro.track('while_prerendering'));
    await sleep(QUIET);
    const early = records.length;
    await p.evaluate(() => window.__activate());
    await waitFor(() => ofType('pageview').length >= 1);
    await sleep(QUIET);
    const late = ofType('pageview').length;
    check('prerender: nothing sent while prerendering; one pageview (and the queued event) after prerenderingchange (simulated)',
      early === 0 && late === 1 && ofType('event').length === 1, `batches before=${early}, pageviews after=${late}`);
    keep();
    await context.close();
  }

  check('all batches: <= 50 events, <= 64 KiB, text/plain', allBatches.every((r) => r.json && r.json.events.length <= 50 && r.bytes <= 65536 && /^text\/plain/.test(r.type)),
    `${allBatches.length} batches`);
} catch (e) {
  check(`harness error: ${e.stack || e}`, false);
} finally {
  await browser.close();
  server.close();
}

const failed = results.filter((r) => !r.ok);
console.log(`\n${results.length - failed.length}/${results.length} passed${failed.length ? `, FAILED: ${failed.map((r) => r.name).join('; ')}` : ''}`);
process.exit(failed.length ? 1 : 0);
