//! `docs/policies.md`'s operation → API table is the code's.

use sluice_config::policy::API_OPERATIONS;

use super::super::{Handling, handling};

/// The operation → API table of `docs/policies.md`, from the code.
fn docs_table() -> String {
    use sluice_config::policy::Operation;
    let mut out = String::from(
        "| operation | judged per topic | not split: refused whole |\n\
         | --- | --- | --- |\n",
    );
    for op in Operation::ALL {
        let (mut per, mut whole) = (Vec::new(), Vec::new());
        for (key, o) in API_OPERATIONS.iter().filter(|(_, o)| *o == op) {
            let name = crate::api_name(*key);
            match handling(*key) {
                Some(Handling::PerTopic) => per.push(name.to_owned()),
                Some(Handling::Listed) => per.push(format!("{name}†")),
                Some(Handling::Whole) => whole.push(name.to_owned()),
                None => panic!("{name} is not policed ({o:?})"),
            }
        }
        let cell = |v: Vec<String>| {
            if v.is_empty() {
                "—".to_owned()
            } else {
                v.join(", ")
            }
        };
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            op.name(),
            cell(per),
            cell(whole)
        ));
    }
    out
}

#[test]
fn the_docs_table_is_the_code() {
    crate::tests::policies_doc_holds(&docs_table());
}
