// Following the stream: the transcript stays scrolled to its end while the reader is there.
//
// Scrolling up stops the following (the reader is reading something); scrolling back to the end,
// or asking a new question, starts it again. Following is not done after each render only:
// content also grows by itself (a marble diagram's image loads after the answer's last render,
// and a follow-up asked then stayed below the fold), so a ResizeObserver re-pins the end
// whenever a message or the transcript changes size.
//
// The transcript's data-follow ("true"/"false") says whether it follows.

const NEAR_END_PX = 40; // this close to the end counts as at the end

export function scrollFollower(box) {
  let following = true;
  let lastTop = box.scrollTop;
  const atEnd = () => box.scrollHeight - box.scrollTop - box.clientHeight <= NEAR_END_PX;
  const mark = () => { box.dataset.follow = String(following); };

  function pin() {
    if (!following) return;
    box.scrollTop = box.scrollHeight;
    lastTop = box.scrollTop;
  }

  box.addEventListener('scroll', () => {
    // The page only ever scrolls down (to the end, or the browser keeping content in place), so
    // a move up is the reader's. Judging by direction, not position, keeps a scroll event that
    // arrives after the content grew again from reading as "the reader left the end".
    if (box.scrollTop < lastTop - 1 && !atEnd()) following = false;
    else if (atEnd()) following = true;
    lastTop = box.scrollTop;
    mark();
  }, { passive: true });

  const sizes = new ResizeObserver(pin);
  sizes.observe(box);
  mark();

  return {
    // Keep `node` (a message just drawn, replacing `old`) followed as it changes size.
    watch(node, old) {
      if (old) sizes.unobserve(old);
      sizes.observe(node);
      pin();
    },
    // Follow again from here (a new question: it and its answer are what the reader wants).
    follow() {
      following = true;
      mark();
      pin();
    },
    // Forget every message (a new chat), keep following the transcript itself.
    reset() {
      sizes.disconnect();
      sizes.observe(box);
      following = true;
      lastTop = box.scrollTop;
      mark();
    },
  };
}
