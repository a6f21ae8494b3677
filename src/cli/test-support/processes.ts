/** The child processes of a process (Linux /proc), for tests that watch or kill a gateway's upstreams. */
import { readdirSync, readFileSync } from 'node:fs';

/** Process ids whose parent is `pid`, with `needle` in their command line when given. */
export function childrenOf(pid: number, needle?: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && (needle === undefined || readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle))) out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}
