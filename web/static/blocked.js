// The block list, from /api/v1/blocklist; reasons are set as text.
async function load() {
  const err = document.getElementById("error");
  try {
    const r = await fetch("/api/v1/blocklist", { cache: "no-cache" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const data = await r.json();
    const body = document.querySelector("#blocked tbody");
    body.replaceChildren();
    for (const b of data.blocked) {
      const tr = body.insertRow();
      tr.insertCell().textContent = b.prefix;
      tr.insertCell().textContent = b.reason;
    }
    document.getElementById("status").textContent =
      data.blocked.length === 0 ? "No server is blocked." : data.blocked.length + " entries";
    err.hidden = true;
  } catch (e) {
    err.textContent = "Could not load the block list: " + e.message;
    err.hidden = false;
  }
}

load();
