// The other masters' health, from /api/v1/upstreams. Names and errors are
// set as text, never as HTML.
const pct = (v) => (v === null || v === undefined ? "–" : (v * 100).toFixed(1) + " %");
const when = (t) => (t ? new Date(t).toLocaleString() : "never");

function cell(tr, text, title) {
  const td = tr.insertCell();
  td.textContent = text;
  if (title) td.title = title;
  return td;
}

async function load() {
  const status = document.getElementById("status");
  const err = document.getElementById("error");
  try {
    const r = await fetch("/api/v1/upstreams", { cache: "no-cache" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const data = await r.json();
    const body = document.querySelector("#upstreams tbody");
    body.replaceChildren();
    for (const u of data.upstreams) {
      const tr = body.insertRow();
      tr.dataset.state = u.state;
      cell(tr, u.name, u.kind + " " + u.address + (u.queries ? "\n" + u.queries.join("\n") : ""));
      cell(tr, u.state, u.last_error || "");
      cell(tr, when(u.last_success));
      cell(tr, String(u.reported));
      cell(tr, String(u.verified));
      cell(tr, u.answer_time_ms === undefined ? "–" : u.answer_time_ms.toFixed(0) + " ms");
      cell(tr, pct(u.uptime_24h));
      cell(tr, pct(u.uptime_7d));
    }
    status.textContent = data.upstreams.length + " masters · " + when(data.generated);
    err.hidden = true;
  } catch (e) {
    err.textContent = "Could not load the masters: " + e.message;
    err.hidden = false;
  }
}

load();
setInterval(load, 30000);
