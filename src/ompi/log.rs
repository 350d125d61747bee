//! Routes `tracing` events to Open MPI's output stream of the component.
//!
//! Levels map onto `coll_sharm_verbose`: WARN and ERROR always print (like
//! `opal_output`), INFO needs verbose >= 1 (why a call was handed over),
//! DEBUG >= 10 (per-communicator setup), TRACE >= 100 (every call).  The
//! subscriber is installed once per process as the global default; if the
//! application installed its own first, sharm's events go to that one.

use std::fmt::Write;
use std::sync::Once;

use tracing::level_filters::LevelFilter;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};

use crate::ompi::ffi;

struct OmpiOutput {
    max: LevelFilter,
}

/// Open MPI verbosity level that prints a tracing level.
fn verbosity(level: &Level) -> i32 {
    match *level {
        Level::ERROR | Level::WARN => 0,
        Level::INFO => 1,
        Level::DEBUG => 10,
        Level::TRACE => 100,
    }
}

fn filter_for(verbose: i32) -> LevelFilter {
    match verbose {
        v if v >= 100 => LevelFilter::TRACE,
        v if v >= 10 => LevelFilter::DEBUG,
        v if v >= 1 => LevelFilter::INFO,
        _ => LevelFilter::WARN,
    }
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl Subscriber for OmpiOutput {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= &self.max
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut msg = Message(String::new());
        event.record(&mut msg);
        ffi::output(verbosity(event.metadata().level()), &msg.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

static INSTALL: Once = Once::new();

/// Installs the subscriber (first call wins; `verbose` is the component's).
pub fn init(verbose: i32) {
    INSTALL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(OmpiOutput {
            max: filter_for(verbose),
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_levels() {
        assert_eq!(filter_for(0), LevelFilter::WARN);
        assert_eq!(filter_for(1), LevelFilter::INFO);
        assert_eq!(filter_for(10), LevelFilter::DEBUG);
        assert_eq!(filter_for(100), LevelFilter::TRACE);
        assert_eq!(verbosity(&Level::INFO), 1);
    }
}
