/**
 * The longest duration a Node timer can wait, 2^31-1 ms (about 24.8 days). A longer one fires at
 * once with a TimeoutOverflowWarning, so a `--deadline` above it timed every call out in a few
 * milliseconds: the gateway's flags that arm a timer refuse it at parse time.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
