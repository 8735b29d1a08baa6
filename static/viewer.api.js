// Requests of the profile page: JSON with the server's message on failure, cached per URL.

/** An error the server answered (its message, and the HTTP status). */
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

let onRetry = null; // (message, seconds): set by a page whose 503s with Retry-After are asked again
const RETRIES = 60;

/** Ask again, after its Retry-After, what the server answers 503 with one (a collection's
 * first look that merges for longer than it waits); report(message, seconds) each time. */
export function retryBusy(report) {
  onRetry = report;
}

/** The JSON at url; report: what a retry of a 503 says (the page's, retryBusy; a request the
 * reader does not wait for passes a silent one). */
export async function getJSON(url, report = null) {
  const said = report || onRetry;
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, { headers: { Accept: "application/json" } });
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    if (res.ok) return body;
    const msg = body && body.error ? body.error.message : `${res.status} ${res.statusText}`;
    const wait = Number(res.headers.get("Retry-After"));
    if (res.status !== 503 || !said || !(wait > 0) || attempt >= RETRIES) throw new ApiError(msg, res.status);
    said(msg, wait);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

/** A text response (an SVG) and pprof's warnings (X-Pprof-Warning headers, which fetch joins
 * with ", "); the server's plain-text line on failure. */
export async function getText(url) {
  const res = await fetch(url);
  const text = await res.text();
  if (!res.ok) throw new ApiError(text.trim() || `${res.status} ${res.statusText}`, res.status);
  const header = res.headers.get("X-Pprof-Warning");
  return { text, warnings: header ? header.split(", ").map(unescapeWarning) : [] };
}

/** A warning header is the line as a JSON string's inside (non-ASCII as \uXXXX). */
function unescapeWarning(w) {
  try {
    return JSON.parse(`"${w}"`);
  } catch {
    return w;
  }
}

const cache = new Map(); // request URL -> Promise of its body

export function cached(url, get = getJSON) {
  if (!cache.has(url)) {
    const promise = get(url);
    promise.catch(() => cache.delete(url)); // a failure may be retried
    cache.set(url, promise);
  }
  return cache.get(url);
}

/** Every answer kept: the next request of each asks the server again (a collection's
 * selection merged anew under the same URL). */
export function forgetCached() {
  cache.clear();
}
