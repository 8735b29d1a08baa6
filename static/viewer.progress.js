// While a slow first view is computed: a spinner with the time elapsed and what the server is
// doing (/api/v1/profiles/<id>/progress), in the page's status line. Quick views show nothing.

const SHOW_AFTER_MS = 300;
const POLL_MS = 250;

/** Shows progress in `status` until the returned function is called; without a progressUrl,
 * the time elapsed only. */
export function watchProgress(status, progressUrl) {
  const started = performance.now();
  let stage = "";
  let stopped = false;
  let timer = 0;
  let poll = 0;

  const draw = () => {
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    status.hidden = false;
    status.classList.remove("vw-error");
    status.classList.add("vw-busy");
    // A page's own note (collection.js: a first look asked again) when the server says nothing.
    const note = stage || status.dataset.note || "";
    status.textContent = `Analysing the profile… ${seconds} s${note ? " — " + note : ""}`;
  };
  const ask = async () => {
    if (!progressUrl) return;
    try {
      const res = await fetch(progressUrl, { headers: { Accept: "application/json" } });
      const body = res.ok ? await res.json() : null;
      if (!stopped && body && body.stage) {
        stage = body.stage;
        draw(); // at once: a stage that lasts less than a tick is still worth seeing
      }
    } catch {
      // progress is a courtesy: the view itself reports real failures
    }
  };
  const show = setTimeout(() => {
    if (stopped) return;
    draw();
    ask();
    timer = setInterval(draw, 100);
    poll = setInterval(ask, POLL_MS);
  }, SHOW_AFTER_MS);

  return () => {
    stopped = true;
    clearTimeout(show);
    clearInterval(timer);
    clearInterval(poll);
    status.classList.remove("vw-busy");
    delete status.dataset.note;
  };
}
