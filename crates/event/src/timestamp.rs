//! [`Timestamp`]: an instant with millisecond precision, as Logstash's `@timestamp` is
//! printed (ISO-8601 in UTC, `2026-11-22T03:43:26.123Z`).

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    millis: i64,
}

impl Timestamp {
    pub fn now() -> Self {
        // Straight from the system clock: through chrono's calendar types this took a fifth
        // of the generator input's time per event.
        let millis = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            // Before 1970 (a clock set wrong): rounded down, as chrono's millis are.
            Err(before) => -(before.duration().as_nanos().div_ceil(1_000_000) as i64),
        };
        Timestamp::from_millis(millis)
    }

    pub const fn from_millis(millis: i64) -> Self {
        Timestamp { millis }
    }

    /// Milliseconds since the Unix epoch.
    pub const fn millis(self) -> i64 {
        self.millis
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.millis).unwrap_or_default()
    }

    pub fn from_datetime<Tz: chrono::TimeZone>(dt: &DateTime<Tz>) -> Self {
        Timestamp::from_millis(dt.timestamp_millis())
    }

    /// Parses ISO-8601 as Logstash accepts it for `@timestamp`: `2014-05-14T10:33:27.123Z`,
    /// with or without fraction, with `Z` or an offset, or without zone (taken as UTC).
    pub fn parse_iso8601(s: &str) -> Option<Self> {
        let s = s.trim();
        if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
            return Some(Timestamp::from_datetime(&dt));
        }
        for fmt in [
            "%Y-%m-%dT%H:%M:%S%.f%:z",
            "%Y-%m-%dT%H:%M:%S%.f%z",
            "%Y-%m-%d %H:%M:%S%.f%:z",
        ] {
            if let Ok(dt) = DateTime::parse_from_str(s, fmt) {
                return Some(Timestamp::from_datetime(&dt));
            }
        }
        for fmt in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
        ] {
            if let Ok(ndt) = NaiveDateTime::parse_from_str(s, fmt) {
                return Some(Timestamp::from_millis(ndt.and_utc().timestamp_millis()));
            }
        }
        None
    }

    /// Appends `YYYY-MM-DDTHH:MM:SS.mmmZ` without going through a formatter.
    pub fn write_iso8601(self, out: &mut String) {
        let dt = self.to_datetime();
        let year = dt.year();
        if !(0..=9999).contains(&year) {
            out.push_str(&dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
            return;
        }
        let ms = self.millis.rem_euclid(1000) as u32;
        let mut buf = [0u8; 24];
        put(&mut buf[0..4], year as u32);
        buf[4] = b'-';
        put(&mut buf[5..7], dt.month());
        buf[7] = b'-';
        put(&mut buf[8..10], dt.day());
        buf[10] = b'T';
        put(&mut buf[11..13], dt.hour());
        buf[13] = b':';
        put(&mut buf[14..16], dt.minute());
        buf[16] = b':';
        put(&mut buf[17..19], dt.second());
        buf[19] = b'.';
        put(&mut buf[20..23], ms);
        buf[23] = b'Z';
        // Every byte written above is ASCII.
        out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
    }

    pub fn to_iso8601(self) -> String {
        let mut s = String::with_capacity(24);
        self.write_iso8601(&mut s);
        s
    }
}

/// Writes `n` as zero-padded decimal digits filling `dst`.
fn put(dst: &mut [u8], mut n: u32) {
    for d in dst.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_iso8601())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_round_trip() {
        let t = Timestamp::parse_iso8601("2014-05-14T10:33:27.123Z").unwrap();
        assert_eq!(t.to_iso8601(), "2014-05-14T10:33:27.123Z");
        let t = Timestamp::parse_iso8601("2014-05-14T12:33:27+02:00").unwrap();
        assert_eq!(t.to_iso8601(), "2014-05-14T10:33:27.000Z");
        let t = Timestamp::parse_iso8601("2014-05-14 10:33:27.5").unwrap();
        assert_eq!(t.to_iso8601(), "2014-05-14T10:33:27.500Z");
        assert!(Timestamp::parse_iso8601("yesterday").is_none());
    }

    #[test]
    fn before_epoch_keeps_millis_positive() {
        let t = Timestamp::from_millis(-1);
        assert_eq!(t.to_iso8601(), "1969-12-31T23:59:59.999Z");
    }
}
