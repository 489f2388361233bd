//! The tag texts, exactly as the reference format spells them (SPEC §8), in one place so
//! the writer and the parser cannot drift apart.

pub const STEP_START: &str = "<<STEP_START>>";
pub const STEP_END: &str = "<<STEP_END>>";
pub const SINGLE_STEP_FLAG: &str = "<<SINGLE_STEP_FLAG>>";
pub const THINKING_START: &str = "<<thinking>>";
pub const THINKING_END: &str = "<</thinking>>";
/// Followed by `name:id>>`.
pub const TOOL_START_PREFIX: &str = "<<TOOL_STEP_START/";
/// Followed by `name:id>>`.
pub const TOOL_END_PREFIX: &str = "<<TOOL_STEP_END/";
pub const TAG_CLOSE: &str = ">>";
pub const TOOL_INPUT_START: &str = "<<TOOL_STEP_INPUT_START>>";
pub const TOOL_INPUT_END: &str = "<<TOOL_STEP_INPUT_END>>";
pub const TOOL_RESULT_START: &str = "<<TOOL_STEP_RESULT_START>>";
pub const TOOL_RESULT_END: &str = "<<TOOL_STEP_RESULT_END>>";
pub const CHECKPOINT_START: &str = "<<CHECKPOINT_START>>";
pub const CHECKPOINT_END: &str = "<<CHECKPOINT_END>>";
pub const INPUT_REQUIRED_START: &str = "<<INPUT_REQUIRED_START>>";
pub const INPUT_REQUIRED_END: &str = "<<INPUT_REQUIRED_END>>";
pub const USER_INPUT_START: &str = "<<USER_INPUT_PROVIDED_START>>";
pub const USER_INPUT_END: &str = "<<USER_INPUT_PROVIDED_END>>";
pub const ERROR_START: &str = "<<ERROR_START>>";
pub const ERROR_END: &str = "<<ERROR_END>>";
pub const ERROR_JSON_START: &str = "<<ERROR_JSON_START>>";
pub const ERROR_JSON_END: &str = "<<ERROR_JSON_END>>";

/// Every tag line starts with this; escaped content never contains it.
pub const INTRODUCER: &str = "<<";

/// First line of a step block: `Step N: title` plus the status mark.
pub const STEP_HEADER_PREFIX: &str = "Step ";
pub const DONE_MARK: &str = " ✓";
pub const FAILED_MARK: &str = " ✗";
/// Line of a checkpoint block.
pub const CHECKPOINT_PREFIX: &str = "Checkpoint: ";
/// First line of an error block's text.
pub const ERROR_PREFIX: &str = "Error: ";
/// Lines of an input-required block after the prompt.
pub const INPUT_TYPES_PREFIX: &str = "Expected input types: ";
pub const CHECKPOINT_NAME_PREFIX: &str = "checkpoint_name: ";
