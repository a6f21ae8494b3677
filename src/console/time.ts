/** Times as the console shows them: UTC instants and short durations. */

/** An epoch-ms instant as `YYYY-MM-DD HH:MM:SS UTC`. */
export function utc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A duration in the largest fitting unit (`42 s`, `5 min`, `3 h`, `2 d`). */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}
