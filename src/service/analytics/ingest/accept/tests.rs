use super::*;

// rule: TRK-26
#[test]
fn event_time_corrects_skew_and_keeps_order() {
    let now = 1_000_000_000;
    assert_eq!(event_time(now, Some(5_000), Some(4_000), 0), now - 1_000);
    // Older than a day, or from the future: the receive time.
    assert_eq!(event_time(now, Some(100_000_000), Some(1), 0), now);
    assert_eq!(event_time(now, Some(4_000), Some(5_000), 0), now);
    assert_eq!(event_time(now, None, Some(4_000), 0), now);
    // Never before the visitor's previous event, never after receipt.
    assert_eq!(event_time(now, Some(5_000), Some(1_000), now - 500), now - 500);
}
