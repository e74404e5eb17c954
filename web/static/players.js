// Player search across servers (GET /api/v1/players?name=TEXT): who is
// playing where, from each server's last player list. Each result links
// to the server's own page, and each person to their page (where they
// played recently), at the path the API gives.

import { el, colourName, gameTitle } from "./quake.js";

const box = document.querySelector("#player-search");
const input = box.querySelector("input");
const tbody = box.querySelector("tbody");
const note = box.querySelector(".note");
let timer = null;

async function search() {
  const name = input.value.trim();
  if (name.length < 2) {
    tbody.replaceChildren();
    note.textContent = "Type at least two letters of a player's name.";
    return;
  }
  try {
    const r = await fetch("/api/v1/players?" + new URLSearchParams({ name }), { cache: "no-cache" });
    const d = await r.json().catch(() => null);
    if (!r.ok) throw new Error(d?.error?.message ?? `the master answered ${r.status}`);
    tbody.replaceChildren(...(d.players ?? []).map(p => el("tr", { "data-address": p.server.address },
      el("td", {}, p.page ? el("a", { href: p.page, class: "player", title: "where they played recently" }, colourName(p.name)) : colourName(p.name)),
      el("td", {}, el("a", { href: "/servers/" + p.server.address, text: p.server.name_plain || p.server.address })),
      el("td", { text: gameTitle(p.server.game) }),
      el("td", { text: p.server.map }),
      el("td", { class: "num", text: p.bot ? "bot" : p.ping }))));
    note.textContent = d.total > (d.players ?? []).length ? `${d.total} found; the first ${d.players.length} shown.`
      : d.total ? "" : "Nobody of that name is playing on a listed server.";
  } catch (e) {
    note.textContent = "Could not search: " + e.message;
  }
}

input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 250); });
