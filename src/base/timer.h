/* Wall-clock time for measurements (load, tok/s, fence polling, download
 * rates): seconds on the monotonic clock, from an arbitrary origin. */
#ifndef ZINC_TIMER_H
#define ZINC_TIMER_H

double timer_now(void);

#endif
