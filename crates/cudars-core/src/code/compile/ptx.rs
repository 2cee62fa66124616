//! PTX: returned as is, or assembled and linked into a cubin by the [`Linker`]
//! ([`SourceCode::Ptx`](crate::SourceCode::Ptx)).

use std::collections::BTreeMap;

use crate::code::linker::Linker;
use crate::code::linker_options::LinkerOptions;
use crate::code::object::{CodeType, ObjectCode};
use crate::error::{Error, Result};

use crate::code::compile::program::Program;
use crate::code::compile::target::CompileTarget;

impl Program {
    pub(super) fn compile_ptx(&self, ptx: &str, target: CompileTarget) -> Result<ObjectCode> {
        let opts = &self.options;
        let name = opts.program_name().to_owned();
        let check = "compiling PTX";
        match target {
            CompileTarget::Ptx => {
                self.set_log(String::new());
                Ok(ObjectCode::with_mapping(
                    ptx.as_bytes().to_vec(),
                    CodeType::Ptx,
                    name,
                    BTreeMap::new(),
                ))
            }
            CompileTarget::Ltoir => Err(Error::invalid(
                check,
                "PTX cannot be turned into LTO-IR; compile to PTX or a cubin",
            )),
            CompileTarget::Cubin => {
                opts.real_arch(check)?;
                let input = ObjectCode::with_mapping(
                    ptx.as_bytes().to_vec(),
                    CodeType::Ptx,
                    name,
                    BTreeMap::new(),
                );
                link_into_cubin(self, &input, opts.to_linker_options()?, String::new())
            }
        }
    }
}

/// Links one compiled input into a cubin, recording the linker's log (after
/// `prefix`, the compiler's) as the program's.
pub(super) fn link_into_cubin(
    program: &Program,
    input: &ObjectCode,
    options: LinkerOptions,
    prefix: String,
) -> Result<ObjectCode> {
    let join = |log: String| {
        if prefix.trim().is_empty() {
            log
        } else if log.trim().is_empty() {
            prefix.clone()
        } else {
            format!("{prefix}\n{log}")
        }
    };
    let result = Linker::new(&[input], options).and_then(|linker| {
        let out = linker.link();
        program.set_log(join(linker.info_log()));
        out
    });
    if let Err(Error::Compile { log, .. }) = &result {
        program.set_log(join(log.clone()));
    }
    result
}
