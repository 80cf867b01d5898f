//! CPU-bound work over many items, spread over the machine's cores.

/// Below this many items, other threads cost more than they save.
const MIN_PARALLEL_ITEMS: usize = 4096;

/// Runs `f` on consecutive parts of `items` and returns its results in the
/// parts' order: on one part in this thread when `items` is short or the
/// machine has one core, else on one part per core (at most 8). `f` may
/// take items out of its part.
///
/// A panic in `f` is resumed in the caller.
pub(crate) fn in_parts<T: Send, R: Send>(
    items: &mut [T],
    f: impl Fn(&mut [T]) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(8);
    if threads < 2 || items.len() < MIN_PARALLEL_ITEMS {
        return vec![f(items)];
    }
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks_mut(items.len().div_ceil(threads))
            .map(|part| scope.spawn(move || f(part)))
            .collect();
        parts
            .into_iter()
            .map(|part| {
                part.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}
