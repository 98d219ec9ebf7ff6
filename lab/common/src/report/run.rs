//! A whole run as the report files show it: where it ran, the ceilings, the
//! rows of each workload, and the peers. `ptxlab bench` builds one as it
//! goes; [`Run::from_results`] reads one back from a `results.json`, so any
//! recorded run can be drawn again (`ptxlab report --from`).

use super::group::{Kind, kind};
use super::row::{Ceilings, Row};
use super::table::Environment;

/// The rows of one workload of the run.
#[derive(Debug, Clone)]
pub struct Section {
    /// Workload name (`poisson`, `primitives`).
    pub name: String,
    /// One line on what it computes (may be empty).
    pub about: String,
    /// Its Rust rows (GPU, simulator, CPU), in run order.
    pub rows: Vec<Row>,
}

/// A run: its environment, ceilings, workloads and peers.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Where and with what it ran.
    pub env: Environment,
    /// Ceilings measured in the run.
    pub ceilings: Ceilings,
    /// The workloads, in run order.
    pub sections: Vec<Section>,
    /// Every peer row (of all workloads), in run order.
    pub peers: Vec<Row>,
}

impl Run {
    /// Every row: the sections' in order, then the peers (the order of
    /// `results.json` and `results.csv`).
    pub fn rows(&self) -> Vec<Row> {
        self.sections
            .iter()
            .flat_map(|s| s.rows.iter().cloned())
            .chain(self.peers.iter().cloned())
            .collect()
    }

    /// Marks the peers that did not solve their problem to its accuracy
    /// INACCURATE ([`super::compare::judge_peers`]), before the report is
    /// drawn: `ptxlab bench` and `ptxlab report` both call it.
    pub fn judge_peers(&mut self) {
        let mut rows = self.rows();
        super::compare::judge_peers(&mut rows);
        let first_peer = rows.len() - self.peers.len();
        for (p, judged) in self.peers.iter_mut().zip(rows.drain(first_peer..)) {
            p.status = judged.status;
        }
    }

    /// The peer rows that belong to `section` (a workload named by the
    /// section or by one of its rows).
    pub fn peers_of(&self, section: &Section) -> Vec<&Row> {
        self.peers
            .iter()
            .filter(|p| {
                p.workload == section.name || section.rows.iter().any(|r| r.workload == p.workload)
            })
            .collect()
    }

    /// The peer rows that belong to no section (a peer script that could not
    /// run, a workload of the peers that this run did not have).
    pub fn stray_peers(&self) -> Vec<&Row> {
        self.peers
            .iter()
            .filter(|p| {
                !self.sections.iter().any(|s| {
                    p.workload == s.name || s.rows.iter().any(|r| r.workload == p.workload)
                })
            })
            .collect()
    }

    /// One run from the parts of a run, each named (its file) for the
    /// errors: the workloads of `bench --only A` and `bench --only B` on
    /// the same machine and commit. Their sections and peers follow in the
    /// order given; the environment and ceilings are the first part's,
    /// with every part's command and modules listed. Parts from different
    /// GPUs, drivers, commits or ptxas builds are refused (naming the
    /// field that differs), and so is a workload that two parts both have.
    pub fn join(parts: Vec<(String, Run)>) -> Result<Run, String> {
        let mut parts = parts.into_iter();
        let (first_name, mut run) = parts.next().ok_or("no results.json to report on")?;
        for (name, part) in parts {
            let fields = [
                ("GPU", &run.env.gpu, &part.env.gpu),
                ("driver", &run.env.driver_version, &part.env.driver_version),
                ("git commit", &run.env.git_sha, &part.env.git_sha),
                ("ptxas", &run.env.ptxas, &part.env.ptxas),
            ];
            for (what, a, b) in fields {
                if a != b {
                    return Err(format!(
                        "{name}: {what} `{b}`, but {first_name} has `{a}`: \
                         only parts of one run (one machine, one commit) join"
                    ));
                }
            }
            if let Some(s) = part
                .sections
                .iter()
                .find(|s| run.sections.iter().any(|r| r.name == s.name))
            {
                return Err(format!(
                    "{name}: workload `{}` is in an earlier part too: each part runs \
                     other workloads (`bench --only`)",
                    s.name
                ));
            }
            for (mine, theirs) in [
                (&mut run.env.command, &part.env.command),
                (&mut run.env.modules_loaded, &part.env.modules_loaded),
            ] {
                if !theirs.is_empty() && !mine.contains(theirs.as_str()) {
                    if !mine.is_empty() {
                        mine.push_str("; ");
                    }
                    mine.push_str(theirs);
                }
            }
            run.sections.extend(part.sections);
            run.peers.extend(part.peers);
        }
        Ok(run)
    }

    /// A run from a `results.json` document: a section per workload of its
    /// Rust rows (in order of first appearance, `about` naming them), the
    /// other rows as peers.
    pub fn from_results(
        doc: &serde_json::Value,
        about: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Run, String> {
        let schema = doc["schema"].as_str().unwrap_or("");
        if schema != "ptxlab-results/1" {
            return Err(format!(
                "schema `{schema}`: a ptxlab results.json says \"schema\": \"ptxlab-results/1\""
            ));
        }
        let rows = doc["rows"]
            .as_array()
            .ok_or("no `rows` array: not a ptxlab results.json")?;
        let env: Environment =
            serde_json::from_value(doc["environment"].clone()).unwrap_or_default();
        let ceilings: Ceilings =
            serde_json::from_value(doc["ceilings"].clone()).unwrap_or_default();
        let mut run = Run {
            env,
            ceilings,
            ..Run::default()
        };
        for (i, v) in rows.iter().enumerate() {
            let r = Row::from_json(v).ok_or_else(|| format!("row {i}: no workload or variant"))?;
            if kind(&r) == Kind::Peer {
                run.peers.push(r);
                continue;
            }
            match run.sections.iter_mut().find(|s| s.name == r.workload) {
                Some(s) => s.rows.push(r),
                None => run.sections.push(Section {
                    name: r.workload.clone(),
                    about: about(&r.workload).unwrap_or_default(),
                    rows: vec![r],
                }),
            }
        }
        Ok(run)
    }
}
