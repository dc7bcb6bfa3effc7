//! What the scheduler publishes for a gang's launcher: the rank-to-node list (the value of
//! `sched.spinel.dev/rank-nodes` on rank 0), and hostfiles derived from it.

/// Largest rank list accepted when parsing (annotations are limited to 256 KiB in total).
pub const MAX_RANKS: usize = 65_536;

/// A rank list that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankListError {
    /// Nothing in it.
    #[error("the rank list is empty")]
    Empty,
    /// A rank without a node.
    #[error("rank {rank} has no node in the rank list")]
    MissingNode {
        /// The rank.
        rank: usize,
    },
    /// Too long.
    #[error("the rank list has more than {MAX_RANKS} ranks")]
    TooLong,
}

/// The annotation value: node names in rank order, comma-separated.
pub fn rank_nodes_value<S: AsRef<str>>(nodes: &[S]) -> String {
    nodes
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses [`rank_nodes_value`]'s output.
pub fn parse_rank_nodes(value: &str) -> Result<Vec<String>, RankListError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(RankListError::Empty);
    }
    let nodes: Vec<String> = v.split(',').map(|s| s.trim().to_owned()).collect();
    if nodes.len() > MAX_RANKS {
        return Err(RankListError::TooLong);
    }
    if let Some(rank) = nodes.iter().position(String::is_empty) {
        return Err(RankListError::MissingNode { rank });
    }
    Ok(nodes)
}

/// An MPI/DeepSpeed hostfile: one `node slots=N` line per run of consecutive ranks on a node,
/// in rank order, so `mpirun --map-by slot` gives each process the rank the scheduler planned.
pub fn mpi_hostfile<S: AsRef<str>>(nodes: &[S], slots_per_rank: u32) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < nodes.len() {
        let n = nodes[i].as_ref();
        let run = nodes[i..].iter().take_while(|m| m.as_ref() == n).count();
        out.push_str(&format!(
            "{n} slots={}\n",
            run as u64 * u64::from(slots_per_rank)
        ));
        i += run;
    }
    out
}

/// One line per pod rank for torchrun: `NODE_RANK HOST`, with rank 0's host as the
/// rendezvous address in the first line's comment.
pub fn torchrun_hostfile<S: AsRef<str>>(nodes: &[S]) -> String {
    let mut out = String::new();
    if let Some(first) = nodes.first() {
        out.push_str(&format!(
            "# --nnodes={} --master-addr={}\n",
            nodes.len(),
            first.as_ref()
        ));
    }
    for (rank, n) in nodes.iter().enumerate() {
        out.push_str(&format!("{rank} {}\n", n.as_ref()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_round_trip() {
        let nodes = ["a", "a", "b"];
        let v = rank_nodes_value(&nodes);
        assert_eq!(v, "a,a,b");
        assert_eq!(parse_rank_nodes(&v).unwrap(), nodes);
        assert_eq!(parse_rank_nodes(" "), Err(RankListError::Empty));
        assert_eq!(
            parse_rank_nodes("a,,b"),
            Err(RankListError::MissingNode { rank: 1 })
        );
    }

    #[test]
    fn hostfiles_follow_rank_order() {
        let nodes = ["n1", "n1", "n2", "n1"];
        assert_eq!(
            mpi_hostfile(&nodes, 8),
            "n1 slots=16\nn2 slots=8\nn1 slots=8\n"
        );
        assert_eq!(
            torchrun_hostfile(&nodes),
            "# --nnodes=4 --master-addr=n1\n0 n1\n1 n1\n2 n2\n3 n1\n"
        );
    }
}
