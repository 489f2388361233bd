//! The text protocol's streaming parser: throughput at 16-byte chunks, and how the cost of a
//! reply grows with the size of an argument (it should grow linearly).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runner::protocol::XmlStreamParser;

fn reply(argument_bytes: usize) -> String {
    let line = "fn main() { println!(\"a &lt; b &amp;&amp; c\"); } // some code\n";
    let mut value = String::with_capacity(argument_bytes + line.len());
    while value.len() < argument_bytes {
        value.push_str(line);
    }
    format!(
        "Here is the file.\n<thinking>Write it in one go.</thinking>\n<write_file>\n<path>src/main.rs</path>\n<content>{value}</content>\n</write_file>"
    )
}

fn parse_in_chunks(text: &str, chunk: usize) -> usize {
    let mut parser = XmlStreamParser::new(["write_file".to_string()]);
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let mut end = (start + chunk).min(bytes.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        parser.push(&text[start..end]);
        start = end;
    }
    let outcome = parser.finish();
    outcome.action.is_some() as usize
}

fn throughput(c: &mut Criterion) {
    let text = reply(4 << 20);
    let mut group = c.benchmark_group("xml_protocol");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("parse_16_byte_chunks_4MiB", |b| {
        b.iter(|| parse_in_chunks(&text, 16))
    });
    group.finish();
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("xml_protocol_argument_size");
    group.sample_size(10);
    for size in [1usize << 20, 10 << 20] {
        let text = reply(size);
        group.bench_function(format!("{}MiB_argument", size >> 20), |b| {
            b.iter(|| parse_in_chunks(&text, 16))
        });
    }
    group.finish();
}

criterion_group!(benches, throughput, scaling);
criterion_main!(benches);
