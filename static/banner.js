// The one-time upload banner: copy buttons, and remembering the upload in this browser's
// "your uploads" list (same localStorage entry as static/index.js), so uploads made through
// the form without JavaScript on the index page are listed too.
"use strict";

(() => {
  const STORE_KEY = "pprof-share:uploads";
  const banner = document.getElementById("upload-banner");
  if (!banner) return;

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (err) {
      return false; // no clipboard API outside secure contexts: the caller selects instead
    }
  }

  for (const button of banner.querySelectorAll("button[data-copy-from]")) {
    const input = document.getElementById(button.dataset.copyFrom);
    const label = button.textContent;
    button.addEventListener("click", async () => {
      input.select();
      const ok = (await copyText(input.value)) || document.execCommand("copy");
      button.textContent = ok ? "Copied" : "Press Ctrl+C";
      setTimeout(() => (button.textContent = label), 1500);
    });
  }

  const d = banner.dataset;
  if (!d.id) return;
  try {
    const list = JSON.parse(localStorage.getItem(STORE_KEY) || "[]");
    const rest = Array.isArray(list) ? list.filter((u) => u && u.id !== d.id) : [];
    const entry = {
      id: d.id,
      url: d.url,
      title: d.title || "",
      token: d.token,
      created_at: Number(d.createdAt) || Date.now() / 1000,
      expires_at: d.expiresAt ? Number(d.expiresAt) : null,
    };
    localStorage.setItem(STORE_KEY, JSON.stringify([entry, ...rest]));
  } catch (err) {
    // storage disabled or corrupt: the banner still shows the token
  }
})();
