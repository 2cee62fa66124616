//! `NvtxLayer`: `tracing` spans as NVTX ranges, events as NVTX marks.

use std::fmt::Write as _;

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes as SpanAttributes, Id, Record};
use tracing_core::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::{Attributes, Color, Domain};

/// A `tracing-subscriber` layer that shows a program's `tracing` spans on the
/// Nsight Systems timeline: each time a span is entered, an NVTX range is pushed
/// in a domain (`cuda-rs` unless told otherwise) with the span's name and fields
/// as its message (`name{field=value …}`), and popped when the span is exited;
/// each event becomes a mark (`message {field=value …}`). Colours follow the level (error red, warn orange,
/// info green, debug blue, trace grey).
///
/// With no tool attached the layer formats nothing: each span and event costs a
/// check.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt as _;
///
/// let subscriber = tracing_subscriber::registry().with(cudars_nvtx::NvtxLayer::new());
/// tracing::subscriber::with_default(subscriber, || {
///     let _s = tracing::info_span!("solve", n = 1024).entered();
/// });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NvtxLayer {
    domain: &'static Domain,
}

impl Default for NvtxLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl NvtxLayer {
    /// A layer putting its ranges in the `cuda-rs` domain ([`Domain::cuda_rs`]).
    pub fn new() -> Self {
        NvtxLayer {
            domain: Domain::cuda_rs(),
        }
    }

    /// A layer putting its ranges in `domain`.
    pub fn with_domain(domain: &'static Domain) -> Self {
        NvtxLayer { domain }
    }
}

/// A span's message, kept in its extensions while a tool is attached.
struct SpanText {
    text: String,
    /// Whether a field was written (to close the braces).
    fields: bool,
    color: Color,
}

impl SpanText {
    fn message(&self) -> String {
        if self.fields {
            format!("{}}}", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// Appends `field=value` pairs: ` ` between pairs, `{` before the first.
struct Fields<'a> {
    out: &'a mut String,
    any: &'a mut bool,
    /// For events: where the `message` field goes, bare.
    message: Option<&'a mut String>,
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            if let Some(m) = self.message.as_deref_mut() {
                let _ = write!(m, "{value:?}");
                return;
            }
        }
        self.out.push(if *self.any { ' ' } else { '{' });
        *self.any = true;
        let _ = write!(self.out, "{}={value:?}", field.name());
    }
}

fn color(level: &Level) -> Color {
    match *level {
        Level::ERROR => Color::RED,
        Level::WARN => Color::ORANGE,
        Level::INFO => Color::GREEN,
        Level::DEBUG => Color::BLUE,
        _ => Color::GREY,
    }
}

impl<S> Layer<S> for NvtxLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &SpanAttributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !crate::tool_attached() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut text = String::from(attrs.metadata().name());
        let mut fields = false;
        attrs.record(&mut Fields {
            out: &mut text,
            any: &mut fields,
            message: None,
        });
        span.extensions_mut().insert(SpanText {
            text,
            fields,
            color: color(attrs.metadata().level()),
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(t) = ext.get_mut::<SpanText>() {
            values.record(&mut Fields {
                out: &mut t.text,
                any: &mut t.fields,
                message: None,
            });
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let ext = span.extensions();
        if let Some(t) = ext.get::<SpanText>() {
            let message = t.message();
            self.domain
                .push(Attributes::new(message.as_str()).color(t.color));
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if span.extensions().get::<SpanText>().is_some() {
            self.domain.pop();
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !crate::tool_attached() {
            return;
        }
        let meta = event.metadata();
        let mut message = String::new();
        let mut text = String::new();
        let mut fields = false;
        event.record(&mut Fields {
            out: &mut text,
            any: &mut fields,
            message: Some(&mut message),
        });
        if fields {
            text.push('}');
        }
        if message.is_empty() {
            message.push_str(meta.name());
        }
        let text = if text.is_empty() {
            message
        } else {
            format!("{message} {text}")
        };
        self.domain
            .mark(Attributes::new(text.as_str()).color(color(meta.level())));
    }
}
