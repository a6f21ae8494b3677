/**
 * Call deadlines without a timer per call (a Node timer costs more than the whole invoke budget): calls
 * with the same timeout share one timer over a FIFO list, in arming order since the clock is monotonic.
 * The timer is unref'd while its list is empty, ref'd while a call is armed. A speed trick
 * (bench/README.md); its reference, {@link useReferenceDeadlines}, runs in references.test.ts.
 */

/** A node in a deadline list; the runtime's per-call state implements it. */
export interface DeadlineEntry {
  deadline: number;
  prevEntry: DeadlineEntry | undefined;
  nextEntry: DeadlineEntry | undefined;
  deadlineList: DeadlineList | undefined;
  onDeadline(): void;
}

/** Node caps timer delays at 2^31-1 ms; longer waits are re-armed in steps. */
const MAX_DELAY = 2 ** 31 - 1;

/** One list per distinct timeout, like Node's own timer lists. */
export class DeadlineList {
  head: DeadlineEntry | undefined = undefined;
  tail: DeadlineEntry | undefined = undefined;
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  size = 0;
  constructor(readonly ms: number) {}
}

const lists = new Map<number, DeadlineList>();
/** The list armed last (always one of `lists`). */
let lastList: DeadlineList | undefined;

function fire(list: DeadlineList): void {
  list.timer = undefined;
  const now = performance.now();
  // Timers run on a millisecond clock; treat "within 1 ms" as due rather than re-arming for a fraction.
  for (let e = list.head; e !== undefined && e.deadline - now < 1; e = list.head) {
    disarmDeadline(e);
    try {
      e.onDeadline();
    } catch {
      // onDeadline settles an outcome and never throws; a throw must not starve the rest of the list.
    }
  }
  if (list.head !== undefined) list.timer = setTimeout(fire, Math.min(MAX_DELAY, Math.ceil(list.head.deadline - now)), list);
  else if (lists.get(list.ms) === list) {
    lists.delete(list.ms);
    if (lastList === list) lastList = undefined;
  }
}

/** Marks an entry armed by the reference (a timer of its own) rather than by a shared list. */
const REFERENCE = new DeadlineList(0);
const referenceTimers = new Map<DeadlineEntry, ReturnType<typeof setTimeout>>();
let useReference = false;

/**
 * Makes calls armed from now on get a `setTimeout` each (the plain reference of the
 * shared lists), or the shared lists again (for tests; the outcomes are the same).
 */
export function useReferenceDeadlines(on: boolean): void {
  useReference = on;
}

function armReference(entry: DeadlineEntry): void {
  const wait = (): void => {
    const left = entry.deadline - performance.now();
    if (left >= 1) {
      referenceTimers.set(entry, setTimeout(wait, Math.min(MAX_DELAY, Math.ceil(left))));
      return;
    }
    disarmDeadline(entry);
    entry.onDeadline();
  };
  entry.deadlineList = REFERENCE;
  referenceTimers.set(entry, setTimeout(wait, Math.min(MAX_DELAY, Math.max(0, Math.ceil(entry.deadline - performance.now())))));
}

/**
 * Arms `entry` to have `onDeadline()` called `ms` milliseconds after `now`
 * (a `performance.now()` reading). `ms` must be a positive finite number.
 */
export function armDeadline(entry: DeadlineEntry, ms: number, now: number): void {
  if (useReference) {
    entry.deadline = now + ms;
    armReference(entry);
    return;
  }
  // Calls mostly share one timeout (the runtime's default): the last list used saves the map lookup.
  let list = lastList !== undefined && lastList.ms === ms ? lastList : lists.get(ms);
  if (list === undefined) {
    list = new DeadlineList(ms);
    lists.set(ms, list);
  }
  lastList = list;
  entry.deadline = now + ms;
  entry.deadlineList = list;
  entry.nextEntry = undefined;
  entry.prevEntry = list.tail;
  if (list.tail === undefined) list.head = entry;
  else list.tail.nextEntry = entry;
  list.tail = entry;
  list.size++;
  if (list.timer === undefined) list.timer = setTimeout(fire, Math.min(MAX_DELAY, ms), list);
  // An idle timer is scheduled no later than this entry's deadline (it was armed earlier for the same ms).
  else if (list.size === 1) list.timer.ref();
}

/** Removes `entry` from its deadline list; a no-op when it is not armed. */
export function disarmDeadline(entry: DeadlineEntry): void {
  const list = entry.deadlineList;
  if (list === undefined) return;
  if (list === REFERENCE) {
    clearTimeout(referenceTimers.get(entry));
    referenceTimers.delete(entry);
    entry.deadlineList = undefined;
    return;
  }
  const { prevEntry, nextEntry } = entry;
  if (prevEntry === undefined) list.head = nextEntry;
  else prevEntry.nextEntry = nextEntry;
  if (nextEntry === undefined) list.tail = prevEntry;
  else nextEntry.prevEntry = prevEntry;
  entry.prevEntry = entry.nextEntry = entry.deadlineList = undefined;
  if (--list.size === 0) list.timer?.unref();
}

/** How many calls are armed right now, over all lists (for tests and diagnostics). */
export function armedDeadlines(): number {
  let n = referenceTimers.size;
  for (const list of lists.values()) n += list.size;
  return n;
}
