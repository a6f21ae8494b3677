/**
 * The console's two static files, built into the package as modules (tsc copies no other files):
 * one stylesheet, and one small script of progressive enhancement (the pages work without it).
 */

import { INBOX_LIVE_JS, LIVE_CSS, LIVE_JS } from './live-assets.js';

/** `/console/assets/console.css`. */
export const CONSOLE_CSS = `:root{color-scheme:light;--fg:#1d2330;--muted:#5b6475;--line:#d7dbe3;--bg:#f6f7f9;--card:#fff;--accent:#1f5fbf;--bad:#b3261e;--ok:#1b7a3a}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);min-width:800px}
header{display:flex;align-items:center;gap:24px;padding:10px 24px;background:#18202e;color:#fff}
header a{color:#cfe0ff;text-decoration:none}
header a[aria-current]{color:#fff;font-weight:600}
header .who{margin-left:auto;color:#c8cdd6}
header form{margin:0}
main{max-width:1600px;margin:0 auto;padding:16px 24px}
h1{font-size:20px;margin:4px 0 12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:12px 16px;margin:0 0 12px}
.card h2{font-size:16px;margin:0 0 8px;word-break:break-all}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0 0 8px}
dt{color:var(--muted)}
dd{margin:0;word-break:break-all}
pre{background:#f0f2f5;border:1px solid var(--line);border-radius:4px;padding:8px;margin:4px 0;max-height:320px;overflow:auto;white-space:pre-wrap;word-break:break-all;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
table{width:100%;border-collapse:collapse;background:var(--card);border:1px solid var(--line);table-layout:fixed}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
th{background:#eef0f4;font-weight:600}
table.log th:nth-child(1){width:13em}table.log th:nth-child(3){width:7em}table.log th:nth-child(6){width:5.5em}
.decide{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
.decide input[type=text]{flex:1;min-width:200px;padding:6px}
button{padding:6px 14px;border-radius:4px;border:1px solid var(--line);background:#fff;cursor:pointer;font:inherit}
button.approve{background:var(--ok);border-color:var(--ok);color:#fff}
button.reject{background:var(--bad);border-color:var(--bad);color:#fff}
.muted{color:var(--muted)}
.notice{padding:8px 12px;border-radius:4px;background:#fff4d6;border:1px solid #e8cf7a;margin:0 0 12px}
.error{background:#fde7e5;border-color:#e8a19b}
form.filters{display:flex;gap:8px;flex-wrap:wrap;margin:0 0 12px}
form.filters input,form.filters select{padding:5px;width:9.5em}
.signin{max-width:420px;margin:80px auto}
.signin input{width:100%;padding:8px;margin:6px 0 12px}
.chart{margin:0}.chart figcaption{font-weight:600;margin:0 0 6px}.chart svg{display:block;max-width:100%;height:auto}
ul.legend{display:flex;flex-wrap:wrap;gap:4px 14px;list-style:none;margin:6px 0 0;padding:0;color:var(--muted);font-size:12px}
.tools{display:flex;gap:16px;margin:0 0 12px;flex-wrap:wrap}
table.stats td,table.stats th{text-align:right}table.stats th{white-space:normal;overflow-wrap:normal}table.stats td:first-child,table.stats th:first-child{text-align:left;width:34%}
tr.bad td{color:var(--bad);font-weight:600}
${LIVE_CSS}`;

/** `/console/assets/console.js`: a form is posted once (its buttons disabled on submit); the live views (live-assets.ts). */
export const CONSOLE_JS = `'use strict';
document.addEventListener('submit', function (e) {
  var form = e.target;
  if (!(form instanceof HTMLFormElement)) return;
  if (form.dataset.sent) { e.preventDefault(); return; }
  form.dataset.sent = '1';
  setTimeout(function () { form.querySelectorAll('button').forEach(function (b) { b.disabled = true; }); }, 0);
});
${LIVE_JS}${INBOX_LIVE_JS}`;
