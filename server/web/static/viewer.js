// The viewer's only script, served from this server (the Content-Security-Policy allows no
// other): remembers which squashes are open, opens the one a permalink names, and copies a
// squash or a range of entries as Markdown.
"use strict";

const STORE = "frs-viewer-open:" + location.pathname;

function squashes() {
  return Array.from(document.querySelectorAll("details[data-key]"));
}

function remembered() {
  try {
    return JSON.parse(localStorage.getItem(STORE) || "{}");
  } catch (error) {
    return {};
  }
}

function remember() {
  const state = remembered();
  for (const block of squashes()) {
    state[block.dataset.key] = block.open;
  }
  localStorage.setItem(STORE, JSON.stringify(state));
}

function setAll(open) {
  for (const block of squashes()) {
    block.open = open;
  }
  remember();
}

function reveal() {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id && document.getElementById(id);
  if (!target) {
    return;
  }
  for (let node = target.parentElement; node; node = node.parentElement) {
    if (node.tagName === "DETAILS") {
      node.open = true;
    }
  }
  for (const old of document.querySelectorAll(".target")) {
    old.classList.remove("target");
  }
  target.classList.add("target");
  target.scrollIntoView({ block: "start" });
}

async function copy(url, button) {
  const response = await fetch(url, { credentials: "same-origin" });
  const text = await response.text();
  if (!response.ok) {
    button.dataset.state = "failed";
    button.title = text;
    return;
  }
  await navigator.clipboard.writeText(text);
  button.dataset.state = "copied";
  button.textContent = "Copied";
}

document.addEventListener("DOMContentLoaded", () => {
  const state = remembered();
  for (const block of squashes()) {
    if (block.dataset.key in state) {
      block.open = state[block.dataset.key];
    }
    block.addEventListener("toggle", remember);
  }
  const expand = document.getElementById("expand-all");
  const collapse = document.getElementById("collapse-all");
  if (expand && collapse) {
    expand.addEventListener("click", () => setAll(true));
    collapse.addEventListener("click", () => setAll(false));
  }
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", (event) => {
      event.preventDefault();
      copy(button.dataset.md, button);
    });
  }
  const range = document.getElementById("copy-range");
  if (range) {
    range.addEventListener("submit", (event) => {
      event.preventDefault();
      const query = new URLSearchParams({ from: range.elements.from.value, to: range.elements.to.value });
      copy(range.dataset.md + "?" + query, range.querySelector("button"));
    });
  }
  window.addEventListener("hashchange", reveal);
  reveal();
});
