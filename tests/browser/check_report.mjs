// Loads ttft HTML reports in Debian's Chromium through puppeteer-core (which drives the
// installed browser and downloads none) and checks each against the JSON report of the
// same run. Driven by tests/browser_report_test.cc; runnable by hand:
//
//   node check_report.mjs MANIFEST.json
//
// MANIFEST: {"chromium": PATH, "out": DIR, "cases": [{"name", "html", "json",
//            "visible_text": [strings that must be shown as text], "forbid": [CSS
//            selectors that must match nothing]}]}
//
// Per case and per viewport width (1280 and 390 px): no console message of level error
// or warning, no page error, no dialog, no request (the page is self-contained); the
// stylesheet applied (the CSP admits it by hash); no horizontal overflow
// (documentElement.scrollWidth <= innerWidth, and every rendered element's box inside
// [0, innerWidth]); a full-page screenshot OUT/NAME-WIDTH.png. Once per case: every
// [data-json] figure equals the JSON value at its path as printed (to the digits
// shown), every [data-json-ratio] equals after / before, every [data-json-text] equals
// the JSON string; no table cell shows a digit that is not such a figure; no SVG axis
// label shows raw epoch seconds; a PDF print OUT/NAME.pdf.
// Prints one line per failure and a summary; exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const manifest = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const failures = [];
const fail = (c, msg) => failures.push(`${c}: ${msg}`);

// The value at "a.b[2].c" of `j`; undefined when the path does not exist.
function at(j, p) {
  let v = j;
  for (const tok of p.match(/[^.[\]]+|\[\d+\]/g)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = tok.startsWith('[') ? v[Number(tok.slice(1, -1))] : v[tok];
  }
  return v;
}

// A number as the report prints it: {v, tol} in base units (s, fraction, count), or
// {v: null} for "n/a"; undefined when the text is no number format of the report.
function parseShown(s) {
  s = s.trim();
  if (s === 'n/a') return { v: null };
  let m = s.match(/^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) UTC$/);
  if (m) {
    return { v: Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) / 1000, tol: 1 };
  }
  const num = '(-?\\d+(?:\\.\\d+)?(?:e[-+]?\\d+)?)';
  // A bound: "< 1e-300", a p-value that underflowed (the JSON holds what is below it).
  m = s.match(new RegExp(`^< ${num}$`));
  if (m) return { v: Number(m[1]), below: true };
  // A quantile the histogram buckets resolve only as a bound: "≤300 ms" (in the first
  // bucket: the JSON holds the interpolated figure, at most the bound) or "≥10.00 s"
  // (above the last finite bound: the JSON holds that bound).
  m = s.match(new RegExp(`^(≤|≥)(${num}\\s+(?:ms|s))$`));
  if (m) {
    const inner = parseShown(m[2].replace(/\s+/, ' '));
    if (inner === undefined) return undefined;
    return { ...inner, bound: m[1] };
  }
  const forms = [
    [`^x${num}$`, 1], [`^${num} ms$`, 1e-3], [`^${num} s$`, 1], [`^${num}%$`, 1e-2],
    [`^${num} rps$`, 1], [`^${num}$`, 1],
  ];
  for (const [re, scale] of forms) {
    m = s.match(new RegExp(re));
    if (!m) continue;
    const [mant, exp] = m[1].split('e');
    const decimals = (mant.split('.')[1] || '').length;
    const tol = 0.5 * 10 ** -decimals * 10 ** (exp ? Number(exp) : 0) * scale;
    return { v: Number(m[1]) * scale, tol };
  }
  return undefined;
}

function close(shown, expected) {
  if (expected === null) return shown.v === null;
  if (typeof expected !== 'number' || shown.v === null) return false;
  if (shown.below) return expected < shown.v;
  if (shown.bound === '≤') return expected <= shown.v + shown.tol;
  if (shown.bound === '≥') return expected >= shown.v - shown.tol;
  return Math.abs(shown.v - expected) <= shown.tol * (1 + 1e-9) + 1e-12;
}

function checkFigures(c, json, marks) {
  let n = 0;
  for (const { kind, path: p, text } of marks) {
    ++n;
    if (kind === 'text') {
      const v = at(json, p);
      if (typeof v !== 'string') fail(c, `data-json-text=${p}: no string at that path (${v})`);
      else if (v !== text) fail(c, `data-json-text=${p}: page shows ${JSON.stringify(text)}, JSON ${JSON.stringify(v)}`);
      continue;
    }
    const shown = parseShown(text);
    if (shown === undefined) {
      fail(c, `${kind} ${p}: "${text}" is not a number format of the report`);
      continue;
    }
    let expected;
    if (kind === 'ratio') {
      const [pb, pa] = p.split(' ');
      const b = at(json, pb), a = at(json, pa);
      if (b === undefined || a === undefined) { fail(c, `data-json-ratio=${p}: path missing`); continue; }
      expected = typeof b === 'number' && typeof a === 'number' && b > 0 ? a / b : null;
    } else {
      expected = at(json, p);
      if (expected === undefined) { fail(c, `data-json=${p}: no such path in the JSON`); continue; }
      if (typeof expected === 'boolean') expected = null;
    }
    if (!close(shown, expected)) fail(c, `${kind} ${p}: page shows "${text}", JSON ${expected}`);
  }
  return n;
}

const args = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  `--user-data-dir=${path.join(manifest.out, 'profile')}`,
];
const browser = await puppeteer.launch({
  executablePath: manifest.chromium, headless: true, args, timeout: 60000,
});
let figures = 0;
try {
  for (const k of manifest.cases) {
    const json = JSON.parse(fs.readFileSync(k.json, 'utf8'));
    for (const width of [1280, 390]) {
      const c = `${k.name} @${width}px`;
      const page = await browser.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warn' || m.type() === 'warning') {
          fail(c, `console ${m.type()}: ${m.text()}`);
        }
      });
      page.on('pageerror', (e) => fail(c, `page error: ${e.message}`));
      page.on('dialog', async (d) => { fail(c, `dialog opened: ${d.message()}`); await d.dismiss(); });
      page.on('request', (r) => {
        if (r.url() !== pathToFileURL(k.html).href) fail(c, `request: ${r.url()}`);
      });
      await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
      await page.goto(pathToFileURL(k.html).href, { waitUntil: 'load' });
      const r = await page.evaluate(() => {
        const vw = window.innerWidth;
        const over = [];
        for (const e of document.querySelectorAll('body *')) {
          const b = e.getBoundingClientRect();
          if (b.width === 0 && b.height === 0) continue;
          if (b.right > vw + 0.5 || b.left < -0.5) {
            over.push(`<${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className && typeof e.className === 'string' ? '.' + e.className : ''}> [${b.left.toFixed(0)}, ${b.right.toFixed(0)}] "${(e.textContent || '').trim().slice(0, 40)}"`);
          }
        }
        return {
          vw, scroll: document.documentElement.scrollWidth, over,
          styled: getComputedStyle(document.body).maxWidth !== 'none',
          text: document.body.innerText,
        };
      });
      if (!r.styled) fail(c, 'the stylesheet was not applied (CSP hash?)');
      if (r.scroll > r.vw) fail(c, `page scrolls sideways: scrollWidth ${r.scroll} > ${r.vw}`);
      for (const o of r.over.slice(0, 10)) fail(c, `element outside the viewport: ${o}`);
      if (r.over.length > 10) fail(c, `... and ${r.over.length - 10} more elements outside`);
      for (const t of k.visible_text || []) {
        if (!r.text.includes(t)) fail(c, `text not shown: ${JSON.stringify(t)}`);
      }
      for (const sel of k.forbid || []) {
        const n = await page.$$eval(sel, (es) => es.length);
        if (n > 0) fail(c, `${n} element(s) match ${sel}`);
      }
      await page.screenshot({ path: path.join(manifest.out, `${k.name}-${width}.png`), fullPage: true });
      if (width === 1280) {
        const marks = await page.evaluate(() => {
          const out = [];
          for (const e of document.querySelectorAll('[data-json]')) out.push({ kind: 'value', path: e.dataset.json, text: e.textContent });
          for (const e of document.querySelectorAll('[data-json-ratio]')) out.push({ kind: 'ratio', path: e.dataset.jsonRatio, text: e.textContent });
          for (const e of document.querySelectorAll('[data-json-text]')) out.push({ kind: 'text', path: e.dataset.jsonText, text: e.textContent });
          return out;
        });
        figures += checkFigures(c, json, marks);
        // Every digit in a table cell belongs to a figure taken from the JSON.
        const bare = await page.evaluate(() => {
          const out = [];
          for (const td of document.querySelectorAll('td')) {
            const copy = td.cloneNode(true);
            for (const e of copy.querySelectorAll('[data-json],[data-json-ratio],[data-json-text],[data-prose]')) e.remove();
            if (/\d/.test(copy.textContent)) out.push(td.textContent.trim().slice(0, 60));
          }
          return out;
        });
        for (const b of bare) fail(c, `table cell with a figure not from the JSON: "${b}"`);
        const epoch = await page.$$eval('svg text', (ts) => ts.map((t) => t.textContent).filter((s) => /\d{9,}/.test(s)));
        for (const s of epoch) fail(c, `chart label shows raw epoch seconds: "${s}"`);
        if (json.verdict !== undefined && !r.text.includes(json.verdict)) fail(c, 'verdict not shown');
        await page.pdf({ path: path.join(manifest.out, `${k.name}.pdf`), format: 'A4', printBackground: true });
      }
      await page.close();
    }
  }
} finally {
  await browser.close();
}
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`checked ${manifest.cases.length} reports at 1280 and 390 px, ${figures} marked figures and strings: ${failures.length} failure(s)`);
process.exit(failures.length ? 1 : 0);
