// The index page: drag-and-drop anywhere and the file picker upload through XMLHttpRequest (for
// upload progress), one file after another; server errors show inline; uploads made from this
// browser are remembered with their delete tokens (index.mine.js). Before anything is sent,
// "Before sharing" shows what the files hold (index.inspect.js reads them here) with boxes to
// tick for what the server should strip. Without this script the form still posts and the
// server answers with a redirect to the link.
import { inspect } from "./index.inspect.js";
import { remember, renderUploads, setBase } from "./index.mine.js";
import { renderReview as drawReview, stripSpec as specOf } from "./index.review.js";

(() => {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const picker = document.getElementById("file");
  const titleInput = document.getElementById("title");
  const expiresInput = document.getElementById("expires");
  const progress = document.getElementById("progress");
  const progressBar = document.getElementById("progress-bar");
  const progressName = document.getElementById("progress-name");
  const progressText = document.getElementById("progress-text");
  const results = document.getElementById("results");
  const maxBytes = Number(form.dataset.maxUploadBytes) || Infinity;
  const maxHuman = form.dataset.maxUploadHuman || "";
  // form.action is absolute and keeps any prefix the app is mounted under.
  const base = form.action;
  setBase(base);

  document.documentElement.classList.add("js");
  picker.multiple = true;

  // ---- sizes and times -------------------------------------------------------------------

  function humanBytes(n) {
    const units = ["bytes", "KiB", "MiB", "GiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return i === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[i]}`;
  }

  // ---- uploading -------------------------------------------------------------------------

  function showProgress(name, loaded, total) {
    progress.hidden = false;
    progressName.textContent = name;
    progressBar.max = total || 1;
    progressBar.value = loaded;
    // Mirrored in attributes so the state can be observed (MutationObserver, tests).
    progress.dataset.loaded = String(loaded);
    progress.dataset.total = String(total);
    progressText.textContent =
      loaded >= total
        ? `${humanBytes(total)} sent, processing…`
        : `${humanBytes(loaded)} / ${humanBytes(total)} (${Math.floor((100 * loaded) / total)}%)`;
  }

  function messageFor(xhr) {
    let body = null;
    try {
      body = JSON.parse(xhr.responseText);
    } catch (err) {
      // a proxy in front may answer with HTML or text
    }
    if (body && body.error && body.error.message) return body.error.message;
    if (xhr.status === 413) return `too large: limit is ${maxHuman}`;
    const text = (xhr.responseText || "").trim();
    if (text && text.length < 300 && !text.startsWith("<")) return text;
    return `the server answered ${xhr.status} ${xhr.statusText}`.trim();
  }

  function send(file, strip) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", base);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (e) => {
        if (e.lengthComputable) showProgress(file.name, e.loaded, e.total);
      });
      xhr.addEventListener("load", () => {
        let body = null;
        if (xhr.status === 200 || xhr.status === 201) {
          try {
            body = JSON.parse(xhr.responseText);
          } catch (err) {
            body = null;
          }
        }
        if (body && body.url) resolve({ ok: true, body });
        else resolve({ ok: false, message: messageFor(xhr) });
      });
      xhr.addEventListener("error", () =>
        resolve({ ok: false, message: "could not reach the server (network error)" }),
      );
      const data = new FormData();
      data.append("file", file, file.name);
      if (titleInput.value.trim()) data.append("title", titleInput.value.trim());
      data.append("expires", expiresInput.value);
      if (strip) data.append("strip", strip);
      showProgress(file.name, 0, file.size);
      xhr.send(data);
    });
  }

  function resultLine(file) {
    const li = document.createElement("li");
    li.className = "pending";
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = file.name;
    const outcome = document.createElement("span");
    outcome.className = "outcome";
    outcome.textContent = "waiting…";
    li.append(name, ": ", outcome);
    results.append(li);
    return { li, outcome };
  }

  // Files wait here with their result line; files dropped during an upload join the queue.
  const queue = [];
  let busy = false;
  let queued = 0; // files since the queue was last empty: only a lone file navigates

  function uploadAll(files, strip = "") {
    if (files.length === 0) return;
    for (const file of files) queue.push({ file, strip, ...resultLine(file) });
    queued += files.length;
    if (!busy) drain();
  }

  async function drain() {
    busy = true;
    form.classList.add("busy");
    let landed = null;
    while (queue.length) {
      const { file, strip, li, outcome } = queue.shift();
      let result;
      if (file.size > maxBytes) {
        result = {
          ok: false,
          message: `too large: ${humanBytes(file.size)}, the limit is ${maxHuman}`,
        };
      } else {
        outcome.textContent = "uploading…";
        result = await send(file, strip);
      }
      li.classList.remove("pending");
      outcome.replaceChildren();
      if (result.ok) {
        li.classList.add("ok");
        remember(result.body, file.name);
        const link = document.createElement("a");
        link.href = result.body.url;
        link.textContent = result.body.url;
        outcome.append(link);
        if (result.body.deduplicated) outcome.append(" (already here: same link as before)");
        if (result.body.stripped && result.body.stripped.length) {
          outcome.append(` (removed: ${result.body.stripped.join("; ")})`);
        }
        landed = result.body.url;
      } else {
        li.classList.add("error");
        outcome.textContent = result.message;
      }
    }
    const lone = queued === 1;
    queued = 0;
    progress.hidden = true;
    form.classList.remove("busy");
    busy = false;
    picker.value = "";
    renderUploads();
    // One file: go where the link goes, as the form without JavaScript does.
    if (lone && landed) window.location.assign(landed);
  }

  // ---- before sharing: what the files hold, and what to strip -----------------------------

  const panel = document.getElementById("review");
  const panelBody = document.getElementById("review-body");
  let waiting = []; // files chosen, not yet sent: they wait for the uploader's choice
  let findings = [];

  /** Reads the files here; uploads at once only when none holds anything to remove. */
  async function review(files) {
    if (files.length === 0) return;
    const read = await Promise.all(
      files.map((f) => (f.size <= maxBytes ? inspect(f).catch(() => null) : null)),
    );
    waiting = waiting.concat(files);
    findings = findings.concat(read.filter(Boolean));
    if (!findings.some(worthAsking)) {
      const now = waiting;
      closeReview();
      uploadAll(now);
      return;
    }
    renderReview();
  }

  function renderReview() {
    drawReview(panel, panelBody, waiting, findings);
  }

  function worthAsking(f) {
    return f.labels.length || f.comments.length || f.paths || f.buildIds || f.types.length > 1;
  }

  function closeReview() {
    waiting = [];
    findings = [];
    panel.hidden = true;
    panelBody.replaceChildren();
  }

  document.getElementById("review-upload").addEventListener("click", () => {
    const files = waiting;
    const spec = specOf(panel);
    closeReview();
    uploadAll(files, spec);
  });
  document.getElementById("review-cancel").addEventListener("click", () => {
    closeReview();
    picker.value = "";
  });

  picker.addEventListener("change", () => review(Array.from(picker.files)));

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (picker.files.length) review(Array.from(picker.files));
    else picker.focus();
  });

  // ---- drag and drop anywhere on the page ------------------------------------------------

  let dragDepth = 0;
  const carriesFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types).includes("Files");

  document.addEventListener("dragenter", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    dragDepth++;
    document.body.classList.add("dragging");
  });
  document.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault(); // without this the browser opens the file instead of dropping it
    e.dataTransfer.dropEffect = "copy";
  });
  document.addEventListener("dragleave", (e) => {
    if (!carriesFiles(e)) return;
    dragDepth = Math.max(0, dragDepth - 1);
    if (dragDepth === 0) document.body.classList.remove("dragging");
  });
  document.addEventListener("drop", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    dragDepth = 0;
    document.body.classList.remove("dragging");
    review(Array.from(e.dataTransfer.files));
  });

  // ---- copy buttons on the manual's examples ---------------------------------------------

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (err) {
      // No clipboard API outside secure contexts: fall back to a selected textarea.
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      const ok = document.execCommand("copy");
      area.remove();
      return ok;
    }
  }

  for (const pre of document.querySelectorAll(".manual pre")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", async () => {
      const ok = await copyText(pre.querySelector("code").textContent);
      button.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    });
    pre.append(button);
  }

  renderUploads();
})();
