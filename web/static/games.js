// The games summary: for each game, its servers, the people and bots on
// them and its busiest maps (GET /api/v1/games). Loaded when the reader
// opens the section.

import { el, gameTitle } from "./quake.js";

const box = document.querySelector("#games");
const tbody = box.querySelector("tbody");
const note = box.querySelector(".note");

async function load() {
  try {
    const r = await fetch("/api/v1/games", { cache: "no-cache" });
    const d = await r.json().catch(() => null);
    if (!r.ok) throw new Error(d?.error?.message ?? `the master answered ${r.status}`);
    tbody.replaceChildren(...(d.games ?? []).map(g => el("tr", { "data-game": g.game },
      el("td", {}, el("a", { href: "/?game=" + encodeURIComponent(g.game), text: gameTitle(g.game) })),
      el("td", { class: "num", text: g.servers }),
      el("td", { class: "num", text: g.humans }),
      el("td", { class: "num", text: g.bots }),
      el("td", { text: (g.busiest_maps ?? []).map(m => `${m.map} (${m.humans})`).join(", ") }))));
    note.textContent = (d.games ?? []).length ? "" : "No server listed yet.";
  } catch (e) {
    note.textContent = "Could not load the games: " + e.message;
  }
}

box.addEventListener("toggle", () => { if (box.open) load(); });
