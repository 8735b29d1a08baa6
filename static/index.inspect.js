// Reads a profile in the browser before anything is sent, to show the uploader what it holds:
// label keys (with a few values), comments, file paths with directories, build ids and the
// sample types. gzip goes through DecompressionStream; the protobuf is walked by the small
// reader below (profile.proto's field numbers), which decodes only the strings it reports.

const GZIP = [0x1f, 0x8b];

/** Wire-format reader over bytes[start, end). Varints above 2^53 lose precision (never an
 *  index or a length we can use anyway). */
class Reader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.b = bytes;
    this.pos = start;
    this.end = end;
  }

  more() {
    return this.pos < this.end;
  }

  varint() {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error("truncated varint");
      const byte = this.b[this.pos++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new Error("bad varint");
  }

  /** [field, wire type] of the next field. */
  tag() {
    const t = this.varint();
    return [Math.floor(t / 8), t % 8];
  }

  /** A length-delimited field's [start, end). */
  span() {
    const n = this.varint();
    const start = this.pos;
    this.pos += n;
    if (this.pos > this.end) throw new Error("field runs past the end");
    return [start, this.pos];
  }

  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.span();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`wire type ${wire}`);
  }

  /** Fields of a sub-message as (field, wire, reader) calls; length-delimited ones get a span. */
  each(visit) {
    while (this.more()) {
      const [field, wire] = this.tag();
      if (visit(field, wire, this) === false) this.skip(wire);
    }
  }
}

/** Varints of a field that may be packed (wire 2) or not (wire 0). */
function ints(r, wire) {
  if (wire === 0) return [r.varint()];
  const [s, e] = r.span();
  const inner = new Reader(r.b, s, e);
  const out = [];
  while (inner.more()) out.push(inner.varint());
  return out;
}

function fields(r, wire, wanted) {
  const [s, e] = r.span();
  const out = {};
  new Reader(r.b, s, e).each((f, w, sub) => {
    if (!wanted.includes(f) || w !== 0) return false;
    out[f] = sub.varint();
    return true;
  });
  return out;
}

async function bytesOf(file) {
  const buf = new Uint8Array(await file.arrayBuffer());
  if (buf[0] !== GZIP[0] || buf[1] !== GZIP[1]) return buf;
  const stream = new Blob([buf]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** What the file holds that an uploader may remove; throws if it cannot be read here. */
export async function inspect(file) {
  const b = await bytesOf(file);
  const strings = []; // spans into b
  const types = [];
  const labels = new Map(); // key index -> {samples, values: Set of str indices, numeric}
  const fileNames = []; // string indices of function and mapping file names
  let comments = [];
  let buildIds = 0;
  let samples = 0;
  let labelled = 0;
  new Reader(b).each((field, wire, r) => {
    if (field === 1 && wire === 2) {
      const vt = fields(r, wire, [1, 2]);
      types.push([vt[1] || 0, vt[2] || 0]);
    } else if (field === 2 && wire === 2) {
      samples++;
      const [s, e] = r.span();
      let any = false;
      new Reader(b, s, e).each((f, w, sr) => {
        if (f !== 3 || w !== 2) return false;
        any = true;
        const lb = fields(sr, w, [1, 2, 3]);
        const key = lb[1] || 0;
        let entry = labels.get(key);
        if (!entry) labels.set(key, (entry = { samples: 0, values: new Set(), numeric: 0 }));
        entry.samples++;
        if (lb[2]) {
          if (entry.values.size < 1000) entry.values.add(lb[2]);
        } else if (lb[3] !== undefined) entry.numeric++;
        return true;
      });
      if (any) labelled++;
    } else if (field === 3 && wire === 2) {
      const m = fields(r, wire, [5, 6]);
      if (m[5]) fileNames.push(m[5]);
      if (m[6]) buildIds++;
    } else if (field === 5 && wire === 2) {
      const fn = fields(r, wire, [4]);
      if (fn[4]) fileNames.push(fn[4]);
    } else if (field === 6 && wire === 2) {
      strings.push(r.span());
    } else if (field === 13 && (wire === 0 || wire === 2)) {
      comments = comments.concat(ints(r, wire));
    } else {
      return false;
    }
    return true;
  });
  const utf8 = new TextDecoder();
  const str = (i) => (i > 0 && i < strings.length ? utf8.decode(b.subarray(...strings[i])) : "");
  const dirs = new Set();
  let withDirs = 0;
  for (const i of new Set(fileNames)) {
    const name = str(i);
    const cut = Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\"));
    if (cut > 0 || (cut === 0 && name.length > 1)) {
      withDirs++;
      dirs.add(name.slice(0, cut + 1));
    }
  }
  return {
    samples,
    labelled,
    labels: [...labels].map(([key, e]) => ({
      key: str(key),
      samples: e.samples,
      values: e.values.size,
      numeric: e.numeric,
      examples: [...e.values].slice(0, 3).map(str),
    })),
    comments: comments.map(str),
    paths: withDirs,
    dirs: [...dirs].sort(),
    buildIds,
    types: types.map(([t, u]) => ({ type: str(t), unit: str(u) })),
  };
}
