// The variant of a 2026-07-28 server issue 40 met: its answers leave out `resultType` (the revision
// requires it; 2025 answers have none anyway). Wraps a Node response so every
// `"resultType":"complete"` is taken out of what is written, JSON and SSE bodies alike; the length
// headers go, as the bodies shrink.

/** Makes `res` write its bodies without `"resultType":"complete"`. */
export function omitResultType(res) {
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const strip = (chunk) =>
    chunk === undefined || chunk === null
      ? chunk
      : Buffer.from(
          (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')).replace(/,"resultType":"complete"|"resultType":"complete",?/g, ''),
        );
  res.write = (chunk, ...rest) => write(strip(chunk), ...rest);
  res.end = (chunk, ...rest) => (typeof chunk === 'function' ? end(chunk) : end(strip(chunk), ...rest));
  res.removeHeader('content-length');
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name, value) => (String(name).toLowerCase() === 'content-length' ? res : setHeader(name, value));
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (status, ...rest) => {
    const headers = rest.find((r) => r && typeof r === 'object');
    if (headers) for (const k of Object.keys(headers)) if (k.toLowerCase() === 'content-length') delete headers[k];
    return writeHead(status, ...rest);
  };
}
