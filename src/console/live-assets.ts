/**
 * The live views' scripts and styles, parts of `console.js` and `console.css` (assets.ts): every
 * page loads the one script, and each part does nothing on a page without its element. Each reads
 * what it needs from `data-` attributes (the CSP allows no inline script) and places every stored
 * string with `textContent`, never as markup.
 */

/** Part of `console.js`: the live calls table, fed by an EventSource (which resumes with Last-Event-ID by itself). */
export const LIVE_JS = `'use strict';
(function () {
  var table = document.getElementById('live');
  if (!table || !window.EventSource) return;
  var body = table.tBodies[0];
  var state = document.getElementById('live-state');
  var empty = document.getElementById('live-empty');
  var MAX_ROWS = 200;
  function cell(tr, text, title) {
    var td = document.createElement('td');
    td.textContent = text == null ? '' : String(text);
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }
  var source = new EventSource(table.dataset.stream);
  source.onopen = function () { state.textContent = 'Live'; };
  source.onerror = function () { state.textContent = 'Reconnecting…'; };
  source.addEventListener('skipped', function (e) {
    var n = 0;
    try { n = JSON.parse(e.data).rows; } catch (err) { n = 0; }
    state.textContent = 'Live (' + (n > 0 ? n + ' older rows' : 'some calls') + ' skipped while this page was behind; the newest are shown)';
  });
  source.addEventListener('call', function (e) {
    var c;
    try { c = JSON.parse(e.data); } catch (err) { return; }
    var tr = document.createElement('tr');
    tr.className = 'phase-' + (c.phase === 'start' ? 'start' : 'end') + (c.status === 'ok' || c.status === 'started' ? '' : ' failed');
    tr.dataset.seq = String(c.seq);
    cell(tr, new Date(c.at).toISOString().slice(11, 23));
    var tool = cell(tr, '');
    var a = document.createElement('a');
    a.href = table.dataset.audit + encodeURIComponent(c.id);
    a.textContent = c.tool;
    tool.appendChild(a);
    cell(tr, c.phase);
    cell(tr, c.status);
    var err = c.category ? c.category + (c.errorCode ? ' / ' + c.errorCode : '') : '';
    cell(tr, err, err);
    var who = (c.principals || []).join(' → ');
    cell(tr, who, who);
    cell(tr, c.phase === 'start' ? '' : c.latencyMs + ' ms');
    var ids = 'call ' + c.toolCallId + ' · run ' + c.runId + ' · trace ' + c.traceId + (c.sessionId ? ' · session ' + c.sessionId : '') + (c.approvalId ? ' · approval ' + c.approvalId : '');
    cell(tr, c.toolCallId, ids);
    body.insertBefore(tr, body.firstChild);
    while (body.rows.length > MAX_ROWS) body.deleteRow(body.rows.length - 1);
    if (empty) { empty.remove(); empty = null; }
  });
})();
`;

/**
 * Part of `console.js`: the inbox's cards follow their requests (another approver's
 * decision, an expiry, an approval no gateway has run yet) by a short poll of `inbox/updates`.
 */
export const INBOX_LIVE_JS = `'use strict';
(function () {
  var root = document.getElementById('inbox');
  if (!root || !window.fetch) return;
  var url = root.dataset.updates;
  var note = document.getElementById('inbox-new');
  function cards() { return Array.prototype.slice.call(document.querySelectorAll('section.card[data-approval]')); }
  function tick() {
    var ids = cards().map(function (c) { return c.dataset.approval; });
    fetch(url + '?ids=' + encodeURIComponent(ids.join(',')), { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (u) {
        if (!u) return;
        cards().forEach(function (card) {
          var s = u.requests[card.dataset.approval];
          if (!s || s.state === card.dataset.state) return;
          card.dataset.state = s.state;
          if (s.state === 'pending') return;
          card.classList.add('settled');
          var p = card.querySelector('p.live-state');
          if (!p) {
            p = document.createElement('p');
            p.className = 'notice live-state';
            card.insertBefore(p, card.firstChild);
          }
          p.textContent = s.text;
          card.querySelectorAll('form.decide button, form.decide input').forEach(function (b) { b.disabled = true; });
        });
        var shown = {};
        cards().forEach(function (c) { shown[c.dataset.approval] = true; });
        var fresh = u.waiting.filter(function (id) { return !shown[id]; }).length;
        if (note) {
          note.hidden = fresh === 0;
          note.className = fresh === 0 ? '' : 'notice';
          note.textContent = fresh === 0 ? '' : fresh + (fresh === 1 ? ' new request waits' : ' new requests wait') + ': reload to see ' + (fresh === 1 ? 'it' : 'them') + '.';
        }
      })
      .catch(function () {});
  }
  setInterval(tick, Number(root.dataset.every) || 2000);
})();
`;

/** Styles of the live views, appended to `console.css`. */
export const LIVE_CSS = `table.live th:nth-child(1){width:8.5em}table.live th:nth-child(3){width:5em}table.live th:nth-child(4){width:5.5em}table.live th:nth-child(6){width:11em}table.live th:nth-child(7){width:5.5em}table.live th:nth-child(8){width:11em}
table.live tr.phase-start{color:var(--muted)}
table.live tr.failed td:nth-child(4){color:var(--bad);font-weight:600}
@media (max-width:1100px){table.live th:nth-child(8),table.live td:nth-child(8){display:none}table.live th:nth-child(6){width:9em}}
section.card.settled{opacity:.75}
`;
