// "New collection" on the index page: POST /api/v1/collections (JSON), then the curl lines
// for this server with the new link and its write token filled in — add a file, add from a
// live endpoint, open it.

/** A word as a POSIX shell reads it back (as viewer.cmd.js writes the pprof command). */
const shellWord = (text) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`);

const box = document.getElementById("collections");
const form = document.getElementById("collection-form");
const $ = (id) => document.getElementById(id);

async function create() {
  const title = $("collection-title").value.trim();
  const res = await fetch(box.dataset.createUrl, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(title ? { title } : {}),
  });
  const body = await res.json().catch(() => null);
  if (!res.ok || !body || !body.url) {
    throw new Error(body && body.error ? body.error.message : `${res.status} ${res.statusText}`);
  }
  return body;
}

function show(c) {
  const token = shellWord(`X-Collection-Token: ${c.token}`);
  const link = $("collection-link");
  link.href = c.url;
  link.textContent = c.url;
  $("collection-add").textContent = `curl -H ${token} -F file=@cpu.pb.gz -F label=pod=api-1 ${c.url}`;
  $("collection-pipe").textContent =
    `curl -s 'localhost:6060/debug/pprof/profile?seconds=30' | ` +
    `curl -H ${token} -H 'X-Labels: pod=api-1' --data-binary @- ${c.url}`;
  $("collection-open").textContent = `go tool pprof -top ${shellWord(`${c.url}?from=now-1h`)}`;
  const api = c.url.replace(/\/c\/[^/]+$/, "/api/v1/collections"); // this server's public address
  $("collection-create").textContent = `curl -i -d ${shellWord("title=api fleet")} ${api}`;
  $("collection-made").hidden = false;
  box.dataset.id = c.id;
}

if (form) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const button = $("new-collection");
    button.disabled = true;
    $("collection-error").hidden = true;
    try {
      show(await create());
    } catch (err) {
      $("collection-error").textContent = `Could not create a collection: ${err.message}`;
      $("collection-error").hidden = false;
    } finally {
      button.disabled = false;
    }
  });
}
