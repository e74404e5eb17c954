// The popularity ranking: servers by average players over the last 24 hours
// (GET /api/v1/ranking, GameTracker's ranking), for the game chosen in the
// filters. Loaded when the reader opens the section, and again on each
// refresh while it is open.

import { el, colourName, gameTitle } from "./quake.js";

// RANKED is how many servers the section lists.
const RANKED = 10;

const box = document.querySelector("#ranking");
const tbody = box.querySelector("tbody");
const note = box.querySelector(".note");
let game = null;

export async function refreshRanking(params) {
  game = params.getAll("game");
  if (!box.open) return;
  const q = new URLSearchParams({ period: "24h", per_page: String(RANKED) });
  for (const g of game) q.append("game", g);
  try {
    const r = await fetch("/api/v1/ranking?" + q, { cache: "no-cache" });
    const d = await r.json().catch(() => null);
    if (!r.ok) throw new Error(d?.error?.message ?? `the master answered ${r.status}`);
    tbody.replaceChildren(...(d.servers ?? []).map(s => el("tr", { "data-address": s.address },
      el("td", { class: "num", text: s.rank }),
      el("td", {}, el("a", { href: "#server=" + encodeURIComponent(s.address), class: "open" }, colourName(s.name))),
      el("td", { text: gameTitle(s.game) }),
      el("td", { class: "num", text: Number(s.avg_players).toFixed(1) }),
      el("td", { class: "num", text: s.peak_players }))));
    note.textContent = (d.servers ?? []).length ? "" : "No player counts recorded in the last 24 hours yet.";
  } catch (e) {
    note.textContent = "Could not load the ranking: " + e.message;
  }
}

box.addEventListener("toggle", () => { if (box.open && game) refreshRanking(new URLSearchParams(game.map(g => ["game", g]))); });
