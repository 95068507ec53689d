// Reads the packed arrays of the page's data: base64 of zigzag LEB128 varints
// (report::PackVarints). Values stay exact up to 2^53, which covers bytes, events and addresses.
function unpackVarints(text) {
  const bin = atob(text || "");
  const out = [];
  let v = 0, mul = 1;
  for (let i = 0; i < bin.length; i++) {
    const b = bin.charCodeAt(i);
    v += (b & 0x7f) * mul;
    if (b & 0x80) {
      mul *= 128;
      continue;
    }
    out.push(v % 2 === 1 ? -(v + 1) / 2 : v / 2);
    v = 0;
    mul = 1;
  }
  return out;
}
