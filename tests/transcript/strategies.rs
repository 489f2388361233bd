//! proptest generators: hostile strings, JSON values, whole trees.

use proptest::prelude::*;
use runner::output::transcript::{
    Checkpoint, ErrorBlock, ErrorJson, InputRequired, Item, Step, StepStatus, ToolResult, ToolStep,
    Transcript, UserInput,
};
use runner::tools::ToolOutput;
use serde_json::{Map, Value};

/// Pieces that are dangerous in a tagged format.
const PIECES: &[&str] = &[
    "<<STEP_START>>",
    "<<STEP_END>>",
    "<<SINGLE_STEP_FLAG>>",
    "<<thinking>>",
    "<</thinking>>",
    "<<TOOL_STEP_START/web_search:call_1>>",
    "<<TOOL_STEP_END/web_search:call_1>>",
    "<<TOOL_STEP_INPUT_START>>",
    "<<TOOL_STEP_INPUT_END>>",
    "<<TOOL_STEP_RESULT_START>>",
    "<<TOOL_STEP_RESULT_END>>",
    "<<CHECKPOINT_START>>",
    "<<CHECKPOINT_END>>",
    "<<INPUT_REQUIRED_START>>",
    "<<INPUT_REQUIRED_END>>",
    "<<USER_INPUT_PROVIDED_START>>",
    "<<USER_INPUT_PROVIDED_END>>",
    "<<ERROR_START>>",
    "<<ERROR_END>>",
    "<<ERROR_JSON_START>>",
    "<<ERROR_JSON_END>>",
    "<<",
    ">>",
    "<",
    ">",
    "<\\",
    "\\",
    "\\\\",
    "\\n",
    "\n",
    "\r\n",
    "\r",
    "\t",
    ":",
    "/",
    " ✓",
    " ✗",
    "✓",
    "✗",
    "Step 1: ",
    "Error: ",
    "Checkpoint: ",
    "checkpoint_name: ",
    "Expected input types: ",
    "\\u003c",
    "é",
    "日本",
    "🦀",
    "\u{2028}",
    "\0",
    " ",
    "",
];

/// Arbitrary strings, biased towards the pieces above and their concatenations.
pub fn hostile_string() -> BoxedStrategy<String> {
    let piece = prop::sample::select(PIECES).prop_map(str::to_owned);
    let chunk = prop_oneof![
        3 => piece,
        1 => any::<String>(),
        1 => "[a-z <>\\\\\n]{0,8}",
    ];
    prop::collection::vec(chunk, 0..6)
        .prop_map(|parts| parts.concat())
        .boxed()
}

pub fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        hostile_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((hostile_string(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

fn status() -> impl Strategy<Value = StepStatus> {
    prop_oneof![
        Just(StepStatus::Done),
        Just(StepStatus::Failed),
        Just(StepStatus::Open)
    ]
}

fn tool_result() -> impl Strategy<Value = ToolResult> {
    (
        any::<bool>(),
        json_value(),
        prop::option::of(hostile_string()),
        prop::collection::vec((hostile_string(), json_value()), 0..3),
    )
        .prop_map(|(success, data, error, metadata)| {
            ToolResult::from(ToolOutput {
                success,
                data,
                error,
                metadata: metadata.into_iter().collect(),
            })
        })
}

fn user_input() -> impl Strategy<Value = UserInput> {
    (json_value(), hostile_string()).prop_map(|(input, kind)| UserInput { input, kind })
}

fn leaf_item() -> BoxedStrategy<Item> {
    prop_oneof![
        hostile_string().prop_map(|text| Item::Thinking { text }),
        hostile_string().prop_map(|text| Item::Text { text }),
        hostile_string().prop_map(|name| Item::Checkpoint(Checkpoint { name })),
        (
            hostile_string(),
            hostile_string(),
            prop::option::of(hostile_string()),
            json_value(),
            prop::option::of(hostile_string())
        )
            .prop_map(|(message, error, code, details, timestamp)| Item::Error(
                ErrorBlock {
                    message,
                    json: ErrorJson {
                        error,
                        code,
                        details,
                        timestamp,
                    },
                }
            )),
        (
            hostile_string(),
            hostile_string(),
            prop::option::of(hostile_string()),
            prop::option::of(user_input())
        )
            .prop_map(|(prompt, input_types, checkpoint_name, provided)| {
                Item::InputRequired(InputRequired {
                    prompt,
                    input_types,
                    checkpoint_name,
                    provided,
                })
            }),
        user_input().prop_map(Item::UserInputProvided),
    ]
    .boxed()
}

/// Items for a list; `in_step` forbids steps (they never nest directly).
pub fn items(depth: u32, in_step: bool) -> BoxedStrategy<Vec<Item>> {
    prop::collection::vec(item(depth, in_step), 0..4).boxed()
}

fn item(depth: u32, in_step: bool) -> BoxedStrategy<Item> {
    if depth == 0 {
        return leaf_item();
    }
    let tool = (
        hostile_string(),
        hostile_string(),
        json_value(),
        items(depth - 1, false),
        prop::option::of(tool_result()),
    )
        .prop_map(|(name, id, input, nested, result)| {
            Item::Tool(ToolStep {
                name,
                id,
                input,
                nested,
                result,
            })
        });
    if in_step {
        prop_oneof![3 => leaf_item(), 1 => tool].boxed()
    } else {
        let step = (
            any::<u32>(),
            hostile_string(),
            status(),
            any::<bool>(),
            items(depth - 1, true),
        )
            .prop_map(|(number, title, status, single_step, items)| {
                Item::Step(Step {
                    number,
                    title,
                    status,
                    single_step,
                    items,
                })
            });
        prop_oneof![3 => leaf_item(), 1 => tool, 2 => step].boxed()
    }
}

/// Arbitrary normalized transcripts.
pub fn transcript() -> BoxedStrategy<Transcript> {
    items(3, false)
        .prop_map(|items| Transcript { items }.normalized())
        .boxed()
}

/// One transcript that puts `s` in every string position there is.
pub fn everywhere(s: &str) -> Transcript {
    let v = Value::String(s.to_owned());
    let mut obj = Map::new();
    obj.insert(s.to_owned(), v.clone());
    let obj = Value::Object(obj);
    let input = UserInput {
        input: v.clone(),
        kind: s.to_owned(),
    };
    let tool = ToolStep {
        name: s.to_owned(),
        id: s.to_owned(),
        input: obj.clone(),
        nested: vec![
            Item::text(s),
            Item::Step(Step {
                number: 7,
                title: s.to_owned(),
                status: StepStatus::Open,
                single_step: true,
                items: vec![Item::thinking(s)],
            }),
            Item::text(s),
        ],
        result: Some(ToolResult::from(ToolOutput {
            success: false,
            data: obj.clone(),
            error: Some(s.to_owned()),
            metadata: obj.as_object().cloned().unwrap_or_default(),
        })),
    };
    let mut items = Vec::new();
    for status in [StepStatus::Done, StepStatus::Failed, StepStatus::Open] {
        items.push(Item::Step(Step {
            number: 1,
            title: s.to_owned(),
            status,
            single_step: false,
            items: vec![
                Item::thinking(s),
                Item::text(s),
                Item::Tool(tool.clone()),
                Item::text(s),
                Item::Error(ErrorBlock {
                    message: s.to_owned(),
                    json: ErrorJson {
                        error: s.to_owned(),
                        code: Some(s.to_owned()),
                        details: obj.clone(),
                        timestamp: Some(s.to_owned()),
                    },
                }),
                Item::text(s),
            ],
        }));
    }
    items.push(Item::Checkpoint(Checkpoint { name: s.to_owned() }));
    for checkpoint_name in [None, Some(s.to_owned())] {
        for provided in [None, Some(input.clone())] {
            items.push(Item::InputRequired(InputRequired {
                prompt: s.to_owned(),
                input_types: s.to_owned(),
                checkpoint_name: checkpoint_name.clone(),
                provided,
            }));
        }
    }
    items.push(Item::UserInputProvided(input));
    items.push(Item::text(s));
    Transcript { items }
}
