/**
 * The dashboard's two files, served by `AssetsController` (no inline script or style: the pages
 * run under a strict Content-Security-Policy).
 */

/** The stylesheet. */
export const DASHBOARD_CSS = `:root{--fg:#1d2430;--muted:#5b6577;--bg:#f6f7f9;--card:#fff;--line:#d9dde5;--accent:#2457c5}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;gap:18px;align-items:center;flex-wrap:wrap;padding:10px 20px;background:#18202e;color:#fff}
header a{color:#dfe6f3;text-decoration:none}header a:hover{color:#fff}.brand{font-weight:700;color:#fff}
nav{display:flex;gap:14px}header form{margin-left:auto;display:flex;gap:6px}
main{padding:16px 24px;max-width:1400px}h1{font-size:20px;margin:4px 0 14px;word-break:break-all}h2{font-size:16px;margin:22px 0 8px}h3{font-size:14px;margin:16px 0 6px}
a{color:var(--accent)}table{border-collapse:collapse;background:var(--card);width:100%;margin:6px 0}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}th{font-weight:600;color:var(--muted);background:#eef1f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}.mono,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
pre{background:var(--card);border:1px solid var(--line);padding:8px;overflow:auto;max-height:320px;margin:4px 0;white-space:pre-wrap;word-break:break-word}
td pre{max-height:160px}.badge{display:inline-block;padding:1px 7px;border-radius:9px;background:#e4e8ef;font-size:12px}
.status-completed{background:#d7f0dd}.status-failed,.status-compensation_failed{background:#f9d6d5}.status-running,.status-compensating{background:#d8e6fb}
.status-waiting,.status-suspended{background:#fcefc9}.status-cancelled,.status-compensated{background:#e6e0f5}.status-pending{background:#eceff3}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0}dt{color:var(--muted)}dd{margin:0}
dl.figures{display:flex;gap:12px;flex-wrap:wrap;margin:0}dl.figures div{background:var(--card);border:1px solid var(--line);padding:8px 14px;min-width:150px}
dl.figures dd{font-size:20px;font-weight:600}.error{background:#fde8e7;border:1px solid #f0b4b1;padding:10px 12px}.empty,.hint,.same{color:var(--muted)}
input,select,textarea,button{font:inherit}input[type=search]{min-width:260px;padding:4px 6px}.search-big{display:flex;gap:8px;align-items:end;flex-wrap:wrap;margin-bottom:6px}
.search-big input[type=search]{min-width:480px}button{padding:4px 12px;border:1px solid #9aa7bd;background:#fff;border-radius:4px;cursor:pointer}
.actions{display:flex;flex-wrap:wrap;gap:10px;align-items:end}.actions h2{width:100%}form.action{display:flex;gap:6px;align-items:end;background:var(--card);border:1px solid var(--line);padding:8px}
form.action label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}form.action label.check{flex-direction:row;align-items:center;gap:4px}textarea{font-family:ui-monospace,monospace;min-width:220px}
.key-panel{background:var(--card);border:1px solid var(--line);padding:4px 16px 12px;margin-top:22px}.readds strong{font-size:18px}
ul.diff{margin:4px 0;padding-left:18px}del{background:#fbd3d0;text-decoration:line-through}ins{background:#cdefd5;text-decoration:none}
.pager{display:flex;gap:16px;margin:8px 0}svg .bar{fill:#4a78d6}svg .axis{fill:var(--muted);font-size:11px}svg .axis-line,svg .edge{stroke:#8d97a8;stroke-width:1.5}
svg .arrow{fill:#8d97a8}svg .node{stroke:#8d97a8;fill:#eceff3}svg .node.status-completed{fill:#d7f0dd}svg .node.status-failed{fill:#f9d6d5}
svg .node.status-running{fill:#d8e6fb}svg .node.status-waiting{fill:#fcefc9}svg .node.status-cancelled{fill:#e6e0f5}svg .node-name{font-weight:600;font-size:13px}
svg .node-status{fill:var(--muted);font-size:11px}svg.chart,svg.flow{background:var(--card);border:1px solid var(--line);max-width:100%;height:auto}
`;

/**
 * Refreshes the page's live parts (`[data-live]`, by id) from the same URL every few seconds
 * (`<meta name="durable-refresh">`, ms) while the tab is visible. The page works without it.
 */
export const DASHBOARD_JS = `'use strict';
(function () {
  var meta = document.querySelector('meta[name="durable-refresh"]');
  var every = meta ? Number(meta.getAttribute('content')) : 0;
  if (!every || !document.querySelector('[data-live]')) return;
  var busy = false;
  function refresh() {
    if (busy || document.visibilityState !== 'visible') return;
    busy = true;
    fetch(location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (text) {
        if (!text) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        document.querySelectorAll('[data-live]').forEach(function (el) {
          var fresh = el.id && doc.getElementById(el.id);
          if (fresh && fresh.innerHTML !== el.innerHTML) el.replaceWith(document.importNode(fresh, true));
        });
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  setInterval(refresh, every);
  document.addEventListener('visibilitychange', refresh);
})();
`;
