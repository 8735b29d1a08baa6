// The colour theme: follows prefers-color-scheme until the toggle picks one, which is kept in
// localStorage. Runs in <head>, before the first paint, so a saved theme never flashes. Pages
// that draw on a canvas redraw on the "themechange" event (and on the media query's change).
"use strict";

(() => {
  const KEY = "pprof-share:theme";
  const root = document.documentElement;
  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  try {
    const saved = localStorage.getItem(KEY);
    if (saved === "dark" || saved === "light") root.dataset.theme = saved;
  } catch (err) {
    // storage disabled: follow the system
  }
  const current = () => root.dataset.theme || (dark.matches ? "dark" : "light");

  function wire() {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    const label = () => {
      const next = current() === "dark" ? "light" : "dark";
      button.textContent = next === "dark" ? "Dark" : "Light";
      button.title = `Switch to the ${next} theme`;
      button.setAttribute("aria-pressed", String(current() === "dark"));
    };
    button.addEventListener("click", () => {
      const next = current() === "dark" ? "light" : "dark";
      root.dataset.theme = next;
      try {
        localStorage.setItem(KEY, next);
      } catch (err) {
        // not kept, but switched
      }
      label();
      document.dispatchEvent(new CustomEvent("themechange", { detail: next }));
    });
    dark.addEventListener("change", label);
    button.hidden = false;
    label();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
