//! PDFs: the whole file as a document block, or the pages asked for as a
//! smaller PDF holding just them. Claude Code 2.1.88 (utils/pdf.ts,
//! utils/pdfUtils.ts) sends the whole file the same way, and renders pages
//! to images with poppler, which cannot run here; the limits, checks and
//! texts are its own.

use toolhost_sdk::fs::format_file_size;

/// Most pages one request may ask for (`PDF_MAX_PAGES_PER_READ`).
pub const MAX_PAGES_PER_READ: u64 = 20;
/// More pages than this need `pages` (`PDF_AT_MENTION_INLINE_THRESHOLD`).
pub const INLINE_PAGE_THRESHOLD: u64 = 10;
/// Largest PDF sent whole (`PDF_TARGET_RAW_SIZE`).
pub const MAX_WHOLE_SIZE: u64 = 20 * 1024 * 1024;
/// Largest PDF pages are taken from (`PDF_MAX_EXTRACT_SIZE`).
pub const MAX_EXTRACT_SIZE: u64 = 100 * 1024 * 1024;

/// A page range: first page and last page (`None`: to the end), 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRange {
    pub first: u64,
    pub last: Option<u64>,
}

impl PageRange {
    /// Pages in the range; an open range counts as one more than allowed.
    pub fn pages(&self) -> u64 {
        match self.last {
            Some(last) => last - self.first + 1,
            None => MAX_PAGES_PER_READ + 1,
        }
    }
}

/// Parses `pages` as Claude Code 2.1.328 does: `"5"`, `"1-10"` or `"3-"`
/// (spaces around the text and the dash allowed), numbers of one to nine
/// digits. `None` for anything else, a page below 1 or a range that runs
/// backwards.
pub fn parse_page_range(pages: &str) -> Option<PageRange> {
    // 2.1.328's `^(\d{1,9})(?:\s*(-)\s*(\d{1,9})?)?$` on the trimmed text.
    let trimmed = pages.trim_matches(is_js_space);
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    let range = match trimmed.split_once('-') {
        None => {
            let page = number(trimmed)?;
            PageRange { first: page, last: Some(page) }
        }
        Some((first, last)) => {
            let first = number(first.trim_end_matches(is_js_space))?;
            let last = last.trim_start_matches(is_js_space);
            PageRange { first, last: if last.is_empty() { None } else { Some(number(last)?) } }
        }
    };
    if range.first < 1 || range.last.is_some_and(|last| last < range.first) {
        return None;
    }
    Some(range)
}

/// Whitespace as JavaScript's `trim` and `\s` see it.
fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// The error for a `pages` value that is not one page or one range.
pub fn invalid_pages(pages: &str) -> String {
    format!(
        "Invalid pages parameter: \"{pages}\". Give one page (\"3\") or one range (\"1-5\"), not a list. To read several \
         pages or ranges, read each one separately. Pages are 1-indexed."
    )
}

/// The error for a range of more pages than one request may ask for.
pub fn too_many_pages_requested(pages: &str) -> String {
    format!(
        "Page range \"{pages}\" exceeds maximum of {MAX_PAGES_PER_READ} pages per request. Please use a smaller range."
    )
}

/// The error for a whole read of a PDF with more than ten pages.
pub fn too_many_pages_to_inline(count: u64) -> String {
    format!(
        "This PDF has {count} pages, which is too many to read at once. Use the pages parameter to read specific \
         page ranges (e.g., pages: \"1-5\"). Maximum {MAX_PAGES_PER_READ} pages per request."
    )
}

/// The number of pages of the PDF in `bytes`, if it can be read.
pub fn page_count(bytes: &[u8]) -> Option<u64> {
    lopdf::Document::load_metadata_mem(bytes).ok().map(|m| u64::from(m.page_count))
}

/// Checks a PDF sent whole, in Claude Code's order (utils/pdf.ts `readPDF`),
/// after the page count (`size` is the file's, `bytes` what was read of it).
pub fn check_whole(path: &str, size: u64, bytes: &[u8]) -> Result<(), String> {
    if size == 0 {
        return Err(format!("PDF file is empty: {path}"));
    }
    if size > MAX_WHOLE_SIZE {
        return Err(format!("PDF file exceeds maximum allowed size of {}.", format_file_size(MAX_WHOLE_SIZE)));
    }
    if !bytes.starts_with(b"%PDF-") {
        return Err(format!("File is not a valid PDF (missing %PDF- header): {path}"));
    }
    Ok(())
}

/// The checks before pages are taken (utils/pdf.ts `extractPDFPages`).
pub fn check_extract(path: &str, size: u64) -> Result<(), String> {
    if size == 0 {
        return Err(format!("PDF file is empty: {path}"));
    }
    if size > MAX_EXTRACT_SIZE {
        return Err(format!(
            "PDF file exceeds maximum allowed size for text extraction ({}).",
            format_file_size(MAX_EXTRACT_SIZE)
        ));
    }
    Ok(())
}

/// A PDF holding pages `range` of the PDF in `bytes`, and how many pages it
/// holds. A range past the last page is cut there; one starting after it is
/// refused as poppler refuses it.
pub fn extract_pages(bytes: &[u8], range: PageRange) -> Result<(Vec<u8>, u64), String> {
    let mut doc = match lopdf::Document::load_mem(bytes) {
        Ok(doc) => doc,
        Err(lopdf::Error::InvalidPassword) => return Err(PASSWORD_PROTECTED.into()),
        Err(_) => return Err(CORRUPTED.into()),
    };
    if doc.is_encrypted() {
        // Loading decrypts a document whose user password is empty; the
        // pages are written out without the encryption.
        if !doc.was_encrypted() {
            return Err(PASSWORD_PROTECTED.into());
        }
        doc.trailer.remove(b"Encrypt");
        doc.encryption_state = None;
    }
    let count = doc.get_pages().len() as u64;
    let last = range.last.unwrap_or(count).min(count);
    if range.first > last {
        return Err(format!(
            "pdftoppm failed: Command Line Error: Wrong page range given: the first page ({}) can not be after the \
             last page ({last}).\n",
            range.first
        ));
    }
    let outside: Vec<u32> = (1..=count).filter(|p| *p < range.first || *p > last).map(|p| p as u32).collect();
    if !outside.is_empty() {
        // Deleting a page walks up its `Parent`s, forever where they loop.
        if !parents_end(&doc) {
            return Err(CORRUPTED.into());
        }
        doc.delete_pages(&outside);
        doc.prune_objects();
    }
    // Counted in what is sent: a damaged page tree may hold fewer pages
    // than the range named.
    let pages = doc.get_pages().len() as u64;
    let mut out = Vec::new();
    doc.save_to(&mut out).map_err(|_| CORRUPTED.to_string())?;
    Ok((out, pages))
}

/// Whether the chain of `Parent` references up from every page ends (at a
/// node without one, or one that is not a dictionary) rather than loops:
/// lopdf follows it when it deletes a page (found by fuzzing: a `Pages`
/// node that is its own parent hung Read). Each node is walked once.
fn parents_end(doc: &lopdf::Document) -> bool {
    use std::collections::HashSet;
    let parent = |id: lopdf::ObjectId| doc.objects.get(&id)?.as_dict().ok()?.get(b"Parent").ok()?.as_reference().ok();
    let mut ending: HashSet<lopdf::ObjectId> = HashSet::new();
    for page in doc.get_pages().into_values() {
        let mut path = HashSet::new();
        let mut at = Some(page);
        while let Some(id) = at {
            if ending.contains(&id) {
                break;
            }
            if !path.insert(id) {
                return false;
            }
            at = parent(id);
        }
        ending.extend(path);
    }
    true
}

/// The pages a PDF's page tree reaches (what [`extract_pages`] counts).
pub fn tree_pages(bytes: &[u8]) -> Option<u64> {
    lopdf::Document::load_mem(bytes).ok().map(|doc| doc.get_pages().len() as u64)
}

const PASSWORD_PROTECTED: &str = "PDF is password-protected. Please provide an unprotected version.";
const CORRUPTED: &str = "PDF file is corrupted or invalid.";

/// The result text of a whole read.
pub fn read_text(path: &str, size: u64) -> String {
    format!("PDF file read: {path} ({})", format_file_size(size))
}

/// The result text of a read of pages.
pub fn pages_text(path: &str, count: u64, size: u64) -> String {
    format!("PDF pages extracted: {count} page(s) from {path} ({})", format_file_size(size))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A valid PDF of `pages` pages, each showing its number.
    pub fn sample_pdf(pages: u32) -> Vec<u8> {
        use lopdf::{Document, Object, Stream, dictionary};
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica"});
        let kids: Vec<Object> = (1..=pages)
            .map(|n| {
                let text = format!("BT /F1 24 Tf 72 720 Td (Page {n}) Tj ET");
                let content = doc.add_object(Stream::new(dictionary! {}, text.into_bytes()));
                doc.add_object(dictionary! {
                    "Type" => "Page",
                    "Parent" => pages_id,
                    "Contents" => content,
                    "Resources" => dictionary! {"Font" => dictionary! {"F1" => font}},
                    "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
                })
                .into()
            })
            .collect();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {"Type" => "Pages", "Kids" => kids, "Count" => pages as i64}),
        );
        let catalog = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    #[test]
    fn page_ranges_parse_as_in_claude_code() {
        let r = |first, last| Some(PageRange { first, last });
        assert_eq!(parse_page_range("3"), r(3, Some(3)));
        assert_eq!(parse_page_range(" 1-5 "), r(1, Some(5)));
        assert_eq!(parse_page_range("10-"), r(10, None));
        assert_eq!(parse_page_range("1 - 5"), r(1, Some(5)));
        assert_eq!(parse_page_range("999999999"), r(999_999_999, Some(999_999_999)));
        // 2.1.328 is strict: one page or one range, nothing after it.
        for bad in [
            "",
            "  ",
            "0",
            "-3",
            "5-2",
            "a-b",
            "0-4",
            "-",
            "x",
            "1-x",
            "0-",
            "2abc",
            "1-5-7",
            "3.9",
            "1,3",
            "+2",
            "1 2",
            "1234567890",
        ] {
            assert_eq!(parse_page_range(bad), None, "{bad:?}");
        }
        assert_eq!(parse_page_range("10-").unwrap().pages(), 21, "an open range is always too many");
        assert_eq!(parse_page_range("1-20").unwrap().pages(), 20);
    }

    #[test]
    fn messages() {
        assert_eq!(
            invalid_pages("abc"),
            r#"Invalid pages parameter: "abc". Give one page ("3") or one range ("1-5"), not a list. To read several pages or ranges, read each one separately. Pages are 1-indexed."#
        );
        assert_eq!(
            too_many_pages_requested("1-21"),
            r#"Page range "1-21" exceeds maximum of 20 pages per request. Please use a smaller range."#
        );
        assert_eq!(
            too_many_pages_to_inline(11),
            "This PDF has 11 pages, which is too many to read at once. Use the pages parameter to read specific \
             page ranges (e.g., pages: \"1-5\"). Maximum 20 pages per request."
        );
        assert_eq!(check_whole("/w/a.pdf", 0, b""), Err("PDF file is empty: /w/a.pdf".into()));
        assert_eq!(
            check_whole("/w/a.pdf", 21 << 20, b"%PDF-"),
            Err("PDF file exceeds maximum allowed size of 20MB.".into())
        );
        assert_eq!(
            check_whole("/w/a.pdf", 4, b"<htm"),
            Err("File is not a valid PDF (missing %PDF- header): /w/a.pdf".into())
        );
        assert_eq!(
            check_extract("/w/a.pdf", 101 << 20),
            Err("PDF file exceeds maximum allowed size for text extraction (100MB).".into())
        );
        assert_eq!(read_text("/w/a.pdf", 2048), "PDF file read: /w/a.pdf (2KB)");
        assert_eq!(pages_text("/w/a.pdf", 2, 1536), "PDF pages extracted: 2 page(s) from /w/a.pdf (1.5KB)");
    }

    #[test]
    fn counts_and_extracts_pages() {
        let pdf = sample_pdf(5);
        assert_eq!(page_count(&pdf), Some(5));
        assert_eq!(page_count(b"not a pdf"), None);
        let (sub, n) = extract_pages(&pdf, PageRange { first: 2, last: Some(3) }).unwrap();
        assert_eq!(n, 2);
        assert_eq!(page_count(&sub), Some(2));
        let doc = lopdf::Document::load_mem(&sub).unwrap();
        let first = *doc.get_pages().get(&1).unwrap();
        assert_eq!(doc.extract_text(&[1]).unwrap().trim(), "Page 2", "{first:?}");
        // Past the end: cut at the last page; starting after it: refused.
        assert_eq!(extract_pages(&pdf, PageRange { first: 4, last: Some(9) }).unwrap().1, 2);
        assert_eq!(
            extract_pages(&pdf, PageRange { first: 7, last: Some(8) }).unwrap_err(),
            "pdftoppm failed: Command Line Error: Wrong page range given: the first page (7) can not be after the \
             last page (5).\n"
        );
        assert_eq!(extract_pages(b"%PDF-1.4 garbage", PageRange { first: 1, last: Some(1) }).unwrap_err(), CORRUPTED);
    }

    #[test]
    fn a_page_tree_whose_parents_loop_is_corrupt_not_a_hang() {
        // The fuzz input: `pages` on its first line, then a PDF whose Pages
        // node names itself as its parent.
        let input = include_bytes!("../../../fuzz/corpus/read_pdf/regression-parent-cycle");
        let pdf = &input[input.iter().position(|&b| b == b'\n').unwrap() + 1..];
        assert_eq!(extract_pages(pdf, PageRange { first: 3, last: None }).unwrap_err(), CORRUPTED);
        let sound = sample_pdf(3);
        assert!(parents_end(&lopdf::Document::load_mem(&sound).unwrap()));
    }
}
