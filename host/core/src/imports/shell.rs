//! `shell`: the host's bash parser and read-only classification, for tools
//! that reason about commands (the same verdict the host applies at spawn
//! time).

use super::CallView;
use crate::contract::bindings::toolhost::tool::shell;
use crate::shell::Operator;

impl shell::Host for CallView<'_> {
    fn parse(&mut self, command: String) -> shell::ParsedCommand {
        let p = crate::shell::parse(&command);
        shell::ParsedCommand {
            commands: p
                .commands
                .into_iter()
                .map(|c| shell::SimpleCommand {
                    argv: c.argv,
                    dynamic: c.dynamic,
                    assignments: c.assignments,
                    redirections: c
                        .redirections
                        .into_iter()
                        .map(|r| shell::Redirection {
                            descriptor: r.descriptor,
                            operator: r.operator,
                            target: r.target,
                        })
                        .collect(),
                })
                .collect(),
            operators: p
                .operators
                .into_iter()
                .map(|o| match o {
                    Operator::And => shell::Operator::And,
                    Operator::Or => shell::Operator::Or,
                    Operator::Sequence => shell::Operator::Sequence,
                    Operator::Pipe => shell::Operator::Pipe,
                    Operator::Background => shell::Operator::Background,
                })
                .collect(),
            command_substitution: p.command_substitution,
            process_substitution: p.process_substitution,
            variable_expansion: p.variable_expansion,
            heredoc: p.heredoc,
            subshell: p.subshell,
            control_flow: p.control_flow,
            parse_error: p.parse_error,
        }
    }

    fn classify(&mut self, command: String) -> shell::Classification {
        let c = crate::shell::classify(&command);
        shell::Classification { read_only: c.read_only, reason: c.reason }
    }
}
