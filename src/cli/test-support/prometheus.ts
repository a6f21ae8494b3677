/** The metrics tests' reading of Prometheus: a text exposition, and a real server's query API. */

/** The series of an exposition: its sample lines without comments. */
export function seriesOf(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

/** Sample name and labels -> value, from an exposition. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of seriesOf(text)) {
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** One sample of an instant query's result. */
export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query of the Prometheus server listening on `port` (its HTTP API). */
export function prometheusQuery(port: number): (q: string) => Promise<PromSample[]> {
  return async (q) => {
    const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await r.json()) as { status: string; data: { result: PromSample[] } };
    if (body.status !== 'success') throw new Error(JSON.stringify(body));
    return body.data.result;
  };
}
