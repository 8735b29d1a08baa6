// The uploads made from this browser: remembered in localStorage with their delete tokens,
// listed on the index page (#mine) with a Delete (asked for in the row) or Forget button.

const STORE_KEY = "pprof-share:uploads";
let base = ""; // the upload form's action: where DELETE /ID goes (setBase)

/** Where the server is: the index form's absolute action, prefix included. */
export function setBase(url) {
  base = url;
}

function humanTime(epochSeconds) {
  if (epochSeconds == null) return "never";
  return new Date(epochSeconds * 1000).toLocaleString();
}

// The API gives RFC 3339 strings; the list keeps epoch seconds (as static/banner.js does).
function toEpoch(value) {
  if (value == null || value === "") return null;
  if (typeof value === "number") return value;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms / 1000;
}

// ---- remembered uploads ----------------------------------------------------------------

function loadUploads() {
  try {
    const list = JSON.parse(localStorage.getItem(STORE_KEY) || "[]");
    return Array.isArray(list) ? list.filter((u) => u && typeof u.id === "string") : [];
  } catch (err) {
    return []; // a corrupt entry must not break the upload page
  }
}

function saveUploads(list) {
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify(list));
  } catch (err) {
    // Storage full or disabled (private mode): the upload itself still worked.
  }
}

export function remember(body, fileName) {
  const list = loadUploads();
  const old = list.find((u) => u.id === body.id);
  // A deduplicated upload carries no token; keep the one we got the first time.
  const entry = {
    id: body.id,
    url: body.url,
    title: body.title || (old && old.title) || fileName || "",
    token: body.delete_token || (old && old.token) || null,
    created_at: toEpoch(body.created_at) || Date.now() / 1000,
    expires_at: toEpoch(body.expires_at),
  };
  saveUploads([entry, ...list.filter((u) => u.id !== body.id)]);
}

function forget(id) {
  saveUploads(loadUploads().filter((u) => u.id !== id));
  renderUploads();
}

export function renderUploads() {
  const section = document.getElementById("mine");
  const tbody = document.getElementById("mine-list");
  const now = Date.now() / 1000;
  // Expired uploads are gone from the server; do not offer them.
  const list = loadUploads().filter((u) => u.expires_at == null || u.expires_at > now);
  tbody.replaceChildren();
  for (const u of list) {
    const row = document.createElement("tr");
    row.dataset.id = u.id;
    const link = document.createElement("a");
    link.href = u.url;
    link.textContent = u.title || u.id;
    const tdLink = document.createElement("td");
    tdLink.append(link);
    const tdCreated = document.createElement("td");
    tdCreated.textContent = humanTime(u.created_at);
    const tdExpires = document.createElement("td");
    tdExpires.textContent = humanTime(u.expires_at);
    const tdAction = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    if (u.token) {
      button.textContent = "Delete";
      button.className = "delete";
      button.addEventListener("click", () => confirmDelete(u, row, button));
    } else {
      button.textContent = "Forget";
      button.title = "No delete token: this browser did not create this upload";
      button.addEventListener("click", () => forget(u.id));
    }
    tdAction.append(button);
    row.append(tdLink, tdCreated, tdExpires, tdAction);
    tbody.append(row);
  }
  section.hidden = list.length === 0;
}

/** Deleting cannot be undone and removes the link for everyone: ask first, in the row. */
function confirmDelete(u, row, button) {
  const ask = document.createElement("span");
  ask.className = "confirm-delete";
  ask.setAttribute("role", "alertdialog");
  ask.append("Delete for everyone? ");
  const yes = document.createElement("button");
  yes.type = "button";
  yes.className = "confirm-yes";
  yes.textContent = "Yes, delete";
  const no = document.createElement("button");
  no.type = "button";
  no.className = "confirm-no";
  no.textContent = "Cancel";
  ask.append(yes, " ", no);
  button.hidden = true;
  button.after(ask);
  no.addEventListener("click", () => {
    ask.remove();
    button.hidden = false;
    button.focus();
  });
  yes.addEventListener("click", () => {
    ask.remove();
    button.hidden = false;
    deleteUpload(u, row, button);
  });
  no.focus();
}

async function deleteUpload(u, row, button) {
  button.disabled = true;
  let status = 0;
  let message = "";
  try {
    const response = await fetch(new URL(encodeURIComponent(u.id), base), {
      method: "DELETE",
      headers: { "X-Delete-Token": u.token, Accept: "application/json" },
    });
    status = response.status;
    if (status >= 400) message = await errorFromResponse(response);
  } catch (err) {
    message = "could not reach the server";
  }
  // 404 and 410: already gone, so there is nothing left to remember either.
  if (status === 204 || status === 200 || status === 404 || status === 410) {
    forget(u.id);
    return;
  }
  button.disabled = false;
  let note = row.querySelector(".row-error");
  if (!note) {
    note = document.createElement("span");
    note.className = "row-error";
    button.after(note);
  }
  note.textContent = ` ${message || `delete failed (${status})`}`;
}

async function errorFromResponse(response) {
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) return body.error.message;
  } catch (err) {
    // not JSON: fall through to the status line
  }
  return `${response.status} ${response.statusText}`.trim();
}
