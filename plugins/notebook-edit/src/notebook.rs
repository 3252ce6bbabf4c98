//! The edit itself, on a notebook held in memory: finding the cell, changing
//! the cells, writing the JSON back. No I/O here.
//!
//! Claude Code works on the notebook as plain JavaScript values and reads
//! their properties without checking their types, so a notebook of an
//! unexpected shape (no `cells`, a `null` cell, no `metadata`) makes it throw
//! a `TypeError`. Those failures are reproduced with Node's messages (see
//! [`Thrown`]); the checks Claude Code does make come back as [`Refusal`].

use crate::json::{self, Object, Value, number_to_string, to_number};
use crate::{CellType, EditMode};

/// `JSON.stringify`'s indent for a notebook: one space, as Jupyter writes.
pub const INDENT: usize = 1;

/// Why the edit cannot go ahead.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A check failed; the message is the model's.
    Invalid(String),
    /// Claude Code would have thrown this JavaScript error.
    Thrown(String),
}

/// A JavaScript error message.
#[derive(Debug, PartialEq, Eq)]
pub struct Thrown(pub String);

impl From<Thrown> for Refusal {
    fn from(t: Thrown) -> Self {
        Refusal::Thrown(t.0)
    }
}

/// What the model asked for, as the tool reads it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub cell_id: Option<&'a str>,
    pub new_source: &'a str,
    pub cell_type: Option<CellType>,
    pub edit_mode: Option<EditMode>,
}

impl Request<'_> {
    /// The cell id, unless absent or empty (JavaScript's `!cell_id`).
    fn id(&self) -> Option<&str> {
        self.cell_id.filter(|id| !id.is_empty())
    }
}

/// `value.name`; `None` in and out is `undefined`.
fn prop<'a>(value: Option<&'a Value>, name: &str) -> Result<Option<&'a Value>, Thrown> {
    match value {
        None => Err(Thrown(format!("Cannot read properties of undefined (reading '{name}')"))),
        Some(Value::Null) => Err(Thrown(format!("Cannot read properties of null (reading '{name}')"))),
        Some(Value::Obj(obj)) => Ok(obj.get(name)),
        Some(_) => Ok(None),
    }
}

/// `notebook.cells` where an array method `method` is called on it.
fn cells_for<'a>(notebook: &'a Value, method: &str) -> Result<&'a Vec<Value>, Thrown> {
    match prop(Some(notebook), "cells")? {
        Some(Value::Arr(cells)) => Ok(cells),
        None => Err(Thrown(format!("Cannot read properties of undefined (reading '{method}')"))),
        Some(Value::Null) => Err(Thrown(format!("Cannot read properties of null (reading '{method}')"))),
        Some(_) => Err(Thrown(format!("notebook.cells.{method} is not a function"))),
    }
}

fn cells_mut<'a>(notebook: &'a mut Value, method: &str) -> Result<&'a mut Vec<Value>, Thrown> {
    cells_for(notebook, method)?;
    match notebook {
        Value::Obj(obj) => match obj.get_mut("cells") {
            Some(Value::Arr(cells)) => Ok(cells),
            _ => unreachable!("cells_for found an array"),
        },
        _ => unreachable!("cells_for found an object"),
    }
}

/// `cells.findIndex(cell => cell.id === id)`.
fn find_index(cells: &[Value], id: &str) -> Result<Option<usize>, Thrown> {
    for (i, cell) in cells.iter().enumerate() {
        if matches!(prop(Some(cell), "id")?, Some(Value::Str(s)) if s.is(id)) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// The index in a `cell-N` id (how Read names cells without an id), as
/// JavaScript's `parseInt` reads the digits.
pub fn parse_cell_id(id: &str) -> Option<f64> {
    let digits = id.strip_prefix("cell-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<f64>().ok()
}

/// `cells[index]`.
fn element(cells: &[Value], index: f64) -> Option<&Value> {
    (index >= 0.0 && index.fract() == 0.0 && index < cells.len() as f64).then(|| &cells[index as usize])
}

/// Claude Code's checks of the parsed notebook before an edit (the part of
/// its `validateInput` after the notebook parsed as truthy JSON).
pub fn check(notebook: &Value, req: &Request) -> Result<(), Refusal> {
    let Some(id) = req.id() else {
        if req.edit_mode != Some(EditMode::Insert) {
            return Err(Refusal::Invalid("Cell ID must be specified when not inserting a new cell.".into()));
        }
        return Ok(());
    };
    let cells = cells_for(notebook, "findIndex")?;
    if find_index(cells, id)?.is_some() {
        return Ok(());
    }
    match parse_cell_id(id) {
        Some(index) if element(cells, index).is_some_and(Value::truthy) => Ok(()),
        Some(index) => {
            Err(Refusal::Invalid(format!("Cell with index {} does not exist in notebook.", number_to_string(index))))
        }
        None => Err(Refusal::Invalid(format!("Cell with ID \"{id}\" not found in notebook."))),
    }
}

/// 2.1.328's refusal of JSON that is not a notebook it can edit.
pub const NOT_A_NOTEBOOK: &str = "Notebook file is not a valid Jupyter notebook (top-level \"cells\" must be an array of \
     cell objects, each with a string or string-array \"source\").";

/// Whether `notebook` is one 2.1.328 edits: `cells` an array of objects,
/// each with a `source` that is a string or an array of strings.
pub fn is_notebook(notebook: &Value) -> bool {
    let Value::Obj(notebook) = notebook else { return false };
    let Some(Value::Arr(cells)) = notebook.get("cells") else { return false };
    cells.iter().all(|cell| match cell {
        Value::Obj(cell) => match cell.get("source") {
            Some(Value::Str(_)) => true,
            Some(Value::Arr(lines)) => lines.iter().all(|l| matches!(l, Value::Str(_))),
            _ => false,
        },
        _ => false,
    })
}

/// A finished edit.
#[derive(Debug, PartialEq)]
pub struct Edited {
    /// The notebook as written back (before line-ending conversion).
    pub json: String,
    /// The edit made (a replace one past the last cell becomes an insert).
    pub mode: EditMode,
    /// The id reported: a new cell's id (only notebooks of nbformat 4.5 and
    /// later have cell ids), or the id the model gave.
    pub cell_id: Option<String>,
    /// The cell type given, or the one assumed.
    pub cell_type: CellType,
    /// The notebook's language (`metadata.language_info.name`, else python).
    pub language: String,
}

impl Edited {
    /// The text the model gets back.
    pub fn message(&self, new_source: &str) -> String {
        // An absent id prints as JavaScript prints it; an inserted cell
        // without one is "a new cell".
        let id = self.cell_id.as_deref().unwrap_or("undefined");
        match (self.mode, &self.cell_id) {
            (EditMode::Replace, _) => format!("Updated cell {id} with {new_source}"),
            (EditMode::Insert, Some(id)) => format!("Inserted cell {id} with {new_source}"),
            (EditMode::Insert, None) => format!("Inserted a new cell with {new_source}"),
            (EditMode::Delete, _) => format!("Deleted cell {id}"),
        }
    }
}

/// JavaScript's `Array.prototype.splice` start: relative to the end when
/// negative, clamped to the array.
fn splice_start(index: f64, len: usize) -> usize {
    let len_f = len as f64;
    let start = if index < 0.0 { (len_f + index.trunc()).max(0.0) } else { index.trunc().min(len_f) };
    start as usize
}

/// Applies the edit to `notebook` and returns the JSON to write, as Claude
/// Code's `call` does after `validateInput` passed. `new_id` makes the id of
/// an inserted cell.
pub fn apply(notebook: &mut Value, req: &Request, new_id: impl FnOnce() -> String) -> Result<Edited, Thrown> {
    let mut cell_type = req.cell_type;
    let index = match req.id() {
        None => 0.0,
        Some(id) => {
            let found = find_index(cells_for(notebook, "findIndex")?, id)?;
            let index = found.map(|i| i as f64).or_else(|| parse_cell_id(id)).unwrap_or(-1.0);
            if req.edit_mode == Some(EditMode::Insert) { index + 1.0 } else { index }
        }
    };
    let mut mode = req.edit_mode;
    if mode == Some(EditMode::Replace)
        && let Ok(Some(Value::Arr(cells))) = prop(Some(notebook), "cells")
        && index == cells.len() as f64
    {
        mode = Some(EditMode::Insert);
        cell_type.get_or_insert(CellType::Code);
    }
    let mode = mode.unwrap_or(EditMode::Replace);

    let metadata = prop(Some(notebook), "metadata")?;
    let language = match prop(metadata, "language_info")? {
        None | Some(Value::Null) => None,
        info => prop(info, "name")?,
    };
    let language = match language {
        None | Some(Value::Null) => "python".to_string(),
        Some(name) => name.to_js_string(),
    };

    let nbformat = prop(Some(notebook), "nbformat")?;
    let minor = prop(Some(notebook), "nbformat_minor")?;
    let has_ids = to_number(nbformat) > 4.0 || (nbformat == Some(&Value::Num(4.0)) && to_number(minor) >= 5.0);
    // Claude Code's `new_cell_id`: `undefined` (None) or a string, maybe
    // empty: a new id for an insert where cells have ids, else the id given.
    let new_cell_id = match (has_ids, mode) {
        (false, EditMode::Insert) => None,
        (true, EditMode::Insert) => Some(new_id()),
        (_, EditMode::Replace | EditMode::Delete) => req.cell_id.map(str::to_string),
    };

    match mode {
        EditMode::Delete => {
            let cells = cells_mut(notebook, "splice")?;
            let start = splice_start(index, cells.len());
            if start < cells.len() {
                cells.remove(start);
            }
        }
        EditMode::Insert => {
            let mut cell = vec![("cell_type", Value::str(cell_type.unwrap_or(CellType::Code).as_str()))];
            // JSON.stringify leaves out an `undefined` id, not an empty one.
            if let Some(id) = &new_cell_id {
                cell.push(("id", Value::str(id)));
            }
            cell.push(("source", Value::str(req.new_source)));
            cell.push(("metadata", Value::Obj(Object::default())));
            if cell_type != Some(CellType::Markdown) {
                cell.push(("execution_count", Value::Null));
                cell.push(("outputs", Value::Arr(Vec::new())));
            }
            let cells = cells_mut(notebook, "splice")?;
            let start = splice_start(index, cells.len());
            cells.insert(start, Value::Obj(Object::from_entries(cell)));
        }
        EditMode::Replace => {
            let target = match prop(Some(notebook), "cells")? {
                Some(Value::Arr(cells)) => element(cells, index),
                other => prop(other, &number_to_string(index))?,
            };
            match target {
                None => return Err(Thrown("Cannot set properties of undefined (setting 'source')".into())),
                Some(Value::Null) => return Err(Thrown("Cannot set properties of null (setting 'source')".into())),
                Some(v @ (Value::Bool(_) | Value::Num(_) | Value::Str(_))) => {
                    return Err(Thrown(format!(
                        "Cannot create property 'source' on {} '{}'",
                        v.type_of(),
                        v.to_js_string()
                    )));
                }
                // Properties set on an array are not part of its JSON.
                Some(Value::Arr(_)) => {}
                Some(Value::Obj(_)) => {
                    let Ok(Value::Obj(cell)) = cell_at_mut(notebook, index) else {
                        unreachable!("the target was found above")
                    };
                    cell.set("source", Value::str(req.new_source));
                    if matches!(cell.get("cell_type"), Some(Value::Str(t)) if t.is("code")) {
                        cell.set("execution_count", Value::Null);
                        cell.set("outputs", Value::Arr(Vec::new()));
                    }
                    if let Some(t) = cell_type
                        && !matches!(cell.get("cell_type"), Some(Value::Str(s)) if s.is(t.as_str()))
                    {
                        cell.set("cell_type", Value::str(t.as_str()));
                    }
                }
            }
        }
    }
    Ok(Edited {
        json: json::stringify(notebook, INDENT),
        mode,
        // Reported as `new_cell_id || undefined`.
        cell_id: new_cell_id.filter(|id| !id.is_empty()),
        cell_type: cell_type.unwrap_or(CellType::Code),
        language,
    })
}

/// The cell at `index` (an array index into `cells`, or a key when `cells`
/// is an object), to change it.
fn cell_at_mut(notebook: &mut Value, index: f64) -> Result<&mut Value, ()> {
    let Value::Obj(obj) = notebook else { return Err(()) };
    match obj.get_mut("cells") {
        Some(Value::Arr(cells)) if index >= 0.0 && (index as usize) < cells.len() => Ok(&mut cells[index as usize]),
        Some(Value::Obj(cells)) => cells.get_mut(&number_to_string(index)).ok_or(()),
        _ => Err(()),
    }
}

/// A new cell id as Claude Code 2.1.328 makes one: the first 8 hex digits
/// of a random UUID, from 32 random bits.
pub fn random_cell_id(bits: u64) -> String {
    format!("{:08x}", bits >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NB45: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Title"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "calc",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "2\n"
     ]
    }
   ],
   "source": [
    "print(1 + 1)"
   ]
  }
 ],
 "metadata": {
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    fn req<'a>(cell_id: Option<&'a str>, src: &'a str, t: Option<CellType>, m: Option<EditMode>) -> Request<'a> {
        Request { cell_id, new_source: src, cell_type: t, edit_mode: m }
    }

    fn run(text: &str, r: Request) -> Result<Edited, Thrown> {
        let mut nb = json::parse(text).expect("test notebook parses");
        apply(&mut nb, &r, || "newid".to_string())
    }

    fn cells(edited: &Edited) -> Vec<Value> {
        match json::parse(&edited.json) {
            Some(Value::Obj(o)) => match o.get("cells") {
                Some(Value::Arr(c)) => c.clone(),
                _ => panic!("no cells"),
            },
            _ => panic!("not an object"),
        }
    }

    fn field<'a>(cell: &'a Value, name: &str) -> Option<&'a Value> {
        match cell {
            Value::Obj(o) => o.get(name),
            _ => None,
        }
    }

    #[test]
    fn replace_clears_outputs_and_keeps_key_order() {
        let e = run(NB45, req(Some("calc"), "x = 2", None, None)).unwrap();
        assert_eq!(e.mode, EditMode::Replace);
        assert_eq!(e.message("x = 2"), "Updated cell calc with x = 2");
        let expected = NB45
            .replace("\"execution_count\": 3", "\"execution_count\": null")
            .replace(
                "\"outputs\": [\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"2\\n\"\n     ]\n    }\n   ]",
                "\"outputs\": []",
            )
            .replace("\"source\": [\n    \"print(1 + 1)\"\n   ]", "\"source\": \"x = 2\"");
        // JSON.stringify leaves no newline at the end.
        assert_eq!(e.json, expected.trim_end());
    }

    #[test]
    fn replace_changes_the_type_and_leaves_markdown_outputs_alone() {
        let e = run(NB45, req(Some("intro"), "print()", Some(CellType::Code), Some(EditMode::Replace))).unwrap();
        let c = cells(&e);
        assert_eq!(field(&c[0], "cell_type"), Some(&Value::str("code")));
        assert_eq!(field(&c[0], "source"), Some(&Value::str("print()")));
        // The cell was markdown when checked: no outputs are added.
        assert_eq!(field(&c[0], "outputs"), None);
        assert!(
            e.json.starts_with("{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"id\": \"intro\""),
            "{}",
            e.json
        );

        let e = run(NB45, req(Some("calc"), "# Now text", Some(CellType::Markdown), None)).unwrap();
        let c = cells(&e);
        assert_eq!(field(&c[1], "cell_type"), Some(&Value::str("markdown")));
        // Cleared first, as a code cell, then retyped: the empty outputs stay.
        assert_eq!(field(&c[1], "outputs"), Some(&Value::Arr(vec![])));
        assert_eq!(field(&c[1], "execution_count"), Some(&Value::Null));
    }

    #[test]
    fn insert_places_a_new_cell_after_the_one_named_or_first() {
        let e = run(NB45, req(Some("intro"), "y = 1", Some(CellType::Code), Some(EditMode::Insert))).unwrap();
        assert_eq!(e.message("y = 1"), "Inserted cell newid with y = 1");
        let c = cells(&e);
        assert_eq!(c.len(), 3);
        assert_eq!(
            json::stringify(&c[1], 0),
            r#"{"cell_type":"code","id":"newid","source":"y = 1","metadata":{},"execution_count":null,"outputs":[]}"#
        );
        let e = run(NB45, req(None, "Hi", Some(CellType::Markdown), Some(EditMode::Insert))).unwrap();
        let c = cells(&e);
        assert_eq!(json::stringify(&c[0], 0), r#"{"cell_type":"markdown","id":"newid","source":"Hi","metadata":{}}"#);
        // After the last cell, by index.
        let e = run(NB45, req(Some("cell-1"), "z", Some(CellType::Code), Some(EditMode::Insert))).unwrap();
        assert_eq!(field(&cells(&e)[2], "source"), Some(&Value::str("z")));
    }

    #[test]
    fn delete_removes_the_cell() {
        let e = run(NB45, req(Some("intro"), "", None, Some(EditMode::Delete))).unwrap();
        assert_eq!(e.message(""), "Deleted cell intro");
        let c = cells(&e);
        assert_eq!(c.len(), 1);
        assert_eq!(field(&c[0], "id"), Some(&Value::str("calc")));
        let e = run(NB45, req(Some("cell-1"), "", None, Some(EditMode::Delete))).unwrap();
        assert_eq!(e.message(""), "Deleted cell cell-1");
        assert_eq!(cells(&e).len(), 1);
    }

    #[test]
    fn older_notebooks_get_no_ids() {
        let old = r#"{"cells":[{"cell_type":"code","source":"a","metadata":{},"outputs":[],"execution_count":1}],
            "metadata":{},"nbformat":4,"nbformat_minor":4}"#;
        let e = run(old, req(Some("cell-0"), "b", None, None)).unwrap();
        assert_eq!(e.message("b"), "Updated cell cell-0 with b", "the id given, echoed");
        let e = run(old, req(Some("cell-0"), "c", Some(CellType::Code), Some(EditMode::Insert))).unwrap();
        assert_eq!(e.message("c"), "Inserted a new cell with c");
        assert_eq!(
            json::stringify(&cells(&e)[1], 0),
            r#"{"cell_type":"code","source":"c","metadata":{},"execution_count":null,"outputs":[]}"#
        );
        // nbformat 5, or a string that reads as a number above 4, has ids.
        let v5 = old.replace("\"nbformat\":4", "\"nbformat\":\"5\"");
        let e = run(&v5, req(Some("cell-0"), "b", None, None)).unwrap();
        assert_eq!(e.cell_id.as_deref(), Some("cell-0"));
    }

    #[test]
    fn checks_find_cells_by_id_then_by_index() {
        let nb = json::parse(NB45).unwrap();
        let check_id = |id: Option<&str>, m: Option<EditMode>| check(&nb, &req(id, "s", Some(CellType::Code), m));
        assert_eq!(check_id(Some("calc"), None), Ok(()));
        assert_eq!(check_id(Some("cell-1"), None), Ok(()));
        assert_eq!(check_id(Some("cell-01"), None), Ok(()));
        assert_eq!(check_id(None, Some(EditMode::Insert)), Ok(()));
        assert_eq!(
            check_id(Some("cell-2"), None),
            Err(Refusal::Invalid("Cell with index 2 does not exist in notebook.".into()))
        );
        assert_eq!(
            check_id(Some("cell-99999999999999999999999"), None),
            Err(Refusal::Invalid("Cell with index 1e+23 does not exist in notebook.".into()))
        );
        assert_eq!(
            check_id(Some("nope"), Some(EditMode::Delete)),
            Err(Refusal::Invalid("Cell with ID \"nope\" not found in notebook.".into()))
        );
        for m in [None, Some(EditMode::Replace), Some(EditMode::Delete)] {
            assert_eq!(
                check_id(Some(""), m),
                Err(Refusal::Invalid("Cell ID must be specified when not inserting a new cell.".into()))
            );
        }
    }

    #[test]
    fn odd_shapes_fail_as_javascript_would() {
        let check_text = |text: &str, id: &str| check(&json::parse(text).unwrap(), &req(Some(id), "s", None, None));
        assert_eq!(
            check_text("{}", "a"),
            Err(Refusal::Thrown("Cannot read properties of undefined (reading 'findIndex')".into()))
        );
        assert_eq!(
            check_text(r#"{"cells":{}}"#, "a"),
            Err(Refusal::Thrown("notebook.cells.findIndex is not a function".into()))
        );
        assert_eq!(
            check_text(r#"{"cells":[null]}"#, "a"),
            Err(Refusal::Thrown("Cannot read properties of null (reading 'id')".into()))
        );
        assert_eq!(
            check_text(r#"{"cells":[0,{"id":"a"}]}"#, "cell-0"),
            Err(Refusal::Invalid("Cell with index 0 does not exist in notebook.".into()))
        );
        assert_eq!(
            run(r#"{"cells":[]}"#, req(None, "s", Some(CellType::Code), Some(EditMode::Insert))),
            Err(Thrown("Cannot read properties of undefined (reading 'language_info')".into()))
        );
        assert_eq!(
            run(r#"{"metadata":{}}"#, req(None, "s", Some(CellType::Code), Some(EditMode::Insert))),
            Err(Thrown("Cannot read properties of undefined (reading 'splice')".into()))
        );
        assert_eq!(
            run(r#"{"cells":["x"],"metadata":null}"#, req(Some("cell-0"), "s", None, None)),
            Err(Thrown("Cannot read properties of null (reading 'language_info')".into()))
        );
        assert_eq!(
            run(r#"{"cells":["x"],"metadata":{}}"#, req(Some("cell-0"), "s", None, None)),
            Err(Thrown("Cannot create property 'source' on string 'x'".into()))
        );
        let e = run(r#"{"cells":[[1]],"metadata":{}}"#, req(Some("cell-0"), "s", None, None)).unwrap();
        assert_eq!(e.json, "{\n \"cells\": [\n  [\n   1\n  ]\n ],\n \"metadata\": {}\n}");
    }

    #[test]
    fn language_comes_from_language_info() {
        let text = NB45.replace("\"name\": \"python\"", "\"name\": \"julia\"");
        assert_eq!(run(&text, req(Some("calc"), "1", None, None)).unwrap().language, "julia");
        let text = NB45.replace("\"language_info\": {\n   \"name\": \"python\"\n  }", "\"language_info\": null");
        assert_eq!(run(&text, req(Some("calc"), "1", None, None)).unwrap().language, "python");
    }

    #[test]
    fn random_ids_look_like_math_random_in_base_36() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..2000u64 {
            let bits = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 40);
            let id = random_cell_id(bits);
            assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
            seen.insert(id);
        }
        assert_eq!(random_cell_id(0xdead_beef_0000_0001), "deadbeef");
        assert!(seen.len() > 1990, "ids differ");
    }

    #[test]
    fn only_cell_objects_with_sources_make_a_notebook() {
        let ok = |text: &str| is_notebook(&json::parse(text).unwrap());
        assert!(ok(NB45));
        assert!(ok(r#"{"cells": []}"#));
        assert!(ok(r#"{"cells": [{"source": ["a", "b"]}]}"#));
        for bad in [
            r#"{"cells": {}}"#,
            r#"{"cells": [1]}"#,
            r#"{"cells": [{"cell_type": "code"}]}"#,
            r#"{"cells": [{"source": ["a", 1]}]}"#,
            r#"{"cells": [{"source": null}]}"#,
            r#"[]"#,
        ] {
            assert!(!ok(bad), "{bad}");
        }
    }

    #[test]
    fn cell_ids_parse_like_parse_int() {
        assert_eq!(parse_cell_id("cell-0"), Some(0.0));
        assert_eq!(parse_cell_id("cell-007"), Some(7.0));
        assert_eq!(parse_cell_id("cell-"), None);
        assert_eq!(parse_cell_id("cell-1a"), None);
        assert_eq!(parse_cell_id("cell--1"), None);
        assert_eq!(parse_cell_id("Cell-1"), None);
        assert_eq!(parse_cell_id("cell-١"), None);
    }
}
