//! One process per rank over TCP: the [`Rendezvous`] at `MASTER_ADDR`
//! (torchrun's and most launchers' convention).
//!
//! Rank 0 listens; every other rank connects to it and says who it is. All
//! traffic then goes through rank 0 as a star: a collective is an
//! [`Rendezvous::all_gather`], in which each rank sends its bytes to rank 0
//! and receives every rank's, in rank order. That is all the job needs:
//!
//! - on GPUs, rank 0's NCCL unique id reaches the others (then NCCL carries
//!   the halos, GPU to GPU);
//! - with simulated devices in separate processes, the Poisson slabs'
//!   transport (`workloads/poisson/multi/tcp.rs`) makes a halo exchange one
//!   all-gather of every rank's sends, and a sum over ranks one all-gather of
//!   the ranks' values, added in rank order;
//! - a batch of Lomb-Scargle curves split across ranks gathers its best
//!   periods (and, when asked, the periodograms) on rank 0;
//! - before they work, the ranks compare a description of their problem
//!   ([`Rendezvous::agree`]), so a rank started with other arguments or
//!   another input file stops every rank with an error that names both.
//!
//! # The port
//! torchrun's agent keeps its own store on `MASTER_PORT`, so rank 0 listens
//! on `MASTER_PORT + 1` unless `PTXLAB_BOOTSTRAP_PORT` names another.
//! `PTXLAB_BOOTSTRAP_TIMEOUT` (seconds, default 120) bounds the wait for
//! rank 0 and for the ranks to join.
//!
//! # Wire format
//! A frame is a little-endian `u64` length and that many bytes. A rank
//! opens with [`MAGIC`], its rank and the world size it was given (two
//! `u64`); rank 0 answers each with one frame: empty when the job is
//! complete and consistent, else the error text every rank reports.

use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The first bytes a rank sends (protocol name and version).
pub const MAGIC: &[u8; 8] = b"ptxlab\x00\x01";
/// Largest frame a rank accepts (a halo batch of a simulated grid is far
/// smaller); a larger length means a stranger on the port.
const MAX_FRAME: u64 = 1 << 32;

/// Where rank 0 listens, from `MASTER_ADDR` and `MASTER_PORT` (plus one) or
/// `PTXLAB_BOOTSTRAP_PORT`, read through `get`. `None` when `MASTER_ADDR`
/// is unset.
pub fn endpoint(get: impl Fn(&str) -> Option<String>) -> Result<Option<(String, u16)>> {
    let Some(host) = get("MASTER_ADDR").filter(|h| !h.trim().is_empty()) else {
        return Ok(None);
    };
    let port = |name: &str, v: &str| -> Result<u16> {
        v.trim().parse::<u16>().map_err(|_| {
            Error::input(
                name,
                format!("`{v}` is not a TCP port (an integer 1..=65535)"),
            )
        })
    };
    let port = match (get("PTXLAB_BOOTSTRAP_PORT"), get("MASTER_PORT")) {
        (Some(p), _) => port("PTXLAB_BOOTSTRAP_PORT", &p)?,
        (None, Some(p)) => port("MASTER_PORT", &p)?.checked_add(1).ok_or_else(|| {
            Error::input(
                "MASTER_PORT",
                "65535: ptxlab listens on MASTER_PORT + 1 (torchrun's store holds MASTER_PORT); \
                 choose a lower port or set PTXLAB_BOOTSTRAP_PORT",
            )
        })?,
        (None, None) => {
            return Err(Error::input(
                "MASTER_PORT",
                format!(
                    "unset, but MASTER_ADDR={host} is set; set MASTER_PORT (ptxlab listens on \
                     MASTER_PORT + 1) or PTXLAB_BOOTSTRAP_PORT"
                ),
            ));
        }
    };
    if port == 0 {
        return Err(Error::input(
            "PTXLAB_BOOTSTRAP_PORT",
            "0; a TCP port 1..=65535",
        ));
    }
    Ok(Some((host.trim().to_string(), port)))
}

/// `PTXLAB_BOOTSTRAP_TIMEOUT` through `get` (default 120 s).
pub fn timeout(get: impl Fn(&str) -> Option<String>) -> Result<Duration> {
    match get("PTXLAB_BOOTSTRAP_TIMEOUT") {
        None => Ok(Duration::from_secs(120)),
        Some(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                Error::input(
                    "PTXLAB_BOOTSTRAP_TIMEOUT",
                    format!("`{s}`; a positive number of seconds"),
                )
            }),
    }
}

fn net(what: impl Into<String>, e: std::io::Error) -> Error {
    Error::input("bootstrap (TCP)", format!("{}: {e}", what.into()))
}

fn write_frame(s: &mut TcpStream, bytes: &[u8], peer: &str) -> Result<()> {
    s.write_all(&(bytes.len() as u64).to_le_bytes())
        .and_then(|_| s.write_all(bytes))
        .map_err(|e| net(format!("sending to {peer}"), e))
}

fn read_frame(s: &mut TcpStream, peer: &str) -> Result<Vec<u8>> {
    let closed = |e: std::io::Error| {
        net(
            format!("{peer} closed its connection (it stopped: see its own output)"),
            e,
        )
    };
    let mut len = [0u8; 8];
    s.read_exact(&mut len).map_err(closed)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(Error::input(
            "bootstrap (TCP)",
            format!("{peer} announced a frame of {len} bytes: not a ptxlab rank"),
        ));
    }
    let mut buf = vec![0u8; len as usize];
    s.read_exact(&mut buf).map_err(closed)?;
    Ok(buf)
}

/// Rank 0's connections to every other rank, or another rank's to rank 0.
#[derive(Debug)]
pub struct Rendezvous {
    rank: usize,
    world: usize,
    /// Rank 0: `peers[r]` is rank `r`'s connection (`None` for itself).
    /// Others: one entry, the connection to rank 0.
    peers: Vec<Option<TcpStream>>,
    at: String,
}

impl Rendezvous {
    /// Joins the job of `world` ranks as `rank`: rank 0 listens on every
    /// interface at `port` and waits for the others; they connect to
    /// `host:port`, retrying until `timeout`.
    pub fn join(
        rank: usize,
        world: usize,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Self> {
        if world == 0 || rank >= world {
            return Err(Error::input(
                "rank",
                format!("rank {rank} of {world}: the rank must be below the world size"),
            ));
        }
        let at = format!("{host}:{port}");
        if world == 1 {
            return Ok(Self {
                rank,
                world,
                peers: Vec::new(),
                at,
            });
        }
        let t0 = Instant::now();
        if rank == 0 {
            Self::serve(world, port, timeout, at)
        } else {
            let addrs: Vec<SocketAddr> = (host, port)
                .to_socket_addrs()
                .map_err(|e| net(format!("MASTER_ADDR={host} does not resolve"), e))?
                .collect();
            let mut s = loop {
                if let Some(s) = addrs
                    .iter()
                    .find_map(|a| TcpStream::connect_timeout(a, Duration::from_millis(500)).ok())
                {
                    break s;
                }
                if t0.elapsed() >= timeout {
                    return Err(Error::input(
                        "MASTER_ADDR",
                        format!(
                            "no rank 0 listening at {at} after {:.0} s: check that rank 0 runs, \
                             that MASTER_ADDR names its host and is reachable from this one, and \
                             the port (MASTER_PORT + 1, or PTXLAB_BOOTSTRAP_PORT); \
                             PTXLAB_BOOTSTRAP_TIMEOUT raises the wait",
                            timeout.as_secs_f64()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            let _ = s.set_nodelay(true);
            let mut hello = MAGIC.to_vec();
            hello.extend_from_slice(&(rank as u64).to_le_bytes());
            hello.extend_from_slice(&(world as u64).to_le_bytes());
            write_frame(&mut s, &hello, "rank 0")?;
            let verdict = read_frame(&mut s, "rank 0")?;
            if !verdict.is_empty() {
                return Err(Error::input(
                    "launcher",
                    String::from_utf8_lossy(&verdict).into_owned(),
                ));
            }
            Ok(Self {
                rank,
                world,
                peers: vec![Some(s)],
                at,
            })
        }
    }

    fn serve(world: usize, port: u16, timeout: Duration, at: String) -> Result<Self> {
        let listener = TcpListener::bind(("0.0.0.0", port)).map_err(|e| {
            net(
                format!(
                    "rank 0 could not listen on port {port} (MASTER_PORT + 1 or \
                     PTXLAB_BOOTSTRAP_PORT; choose a free one)"
                ),
                e,
            )
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| net("listening", e))?;
        let t0 = Instant::now();
        let mut peers: Vec<Option<TcpStream>> = (0..world).map(|_| None).collect();
        let mut problem: Option<String> = None;
        let mut joined = 1;
        while joined < world {
            match listener.accept() {
                Ok((mut s, from)) => {
                    s.set_nonblocking(false).map_err(|e| net("accepting", e))?;
                    let _ = s.set_nodelay(true);
                    // A stranger that never speaks must not hang the job.
                    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                    let who = format!("a connection from {from}");
                    let hello = read_frame(&mut s, &who)?;
                    let _ = s.set_read_timeout(None);
                    if hello.len() != 24 || &hello[..8] != MAGIC {
                        continue;
                    }
                    let word = |i: usize| {
                        u64::from_le_bytes(
                            hello[8 + 8 * i..16 + 8 * i].try_into().unwrap_or([0; 8]),
                        ) as usize
                    };
                    let (r, w) = (word(0), word(1));
                    let bad = if w != world {
                        Some(format!(
                            "rank {r} was started with a world size of {w}, rank 0 with {world}: \
                             every rank must be given the same world size"
                        ))
                    } else if r == 0 || r >= world {
                        Some(format!(
                            "a rank {r} joined a world of {world} (rank 0 is this one)"
                        ))
                    } else if peers[r].is_some() {
                        Some(format!("two processes joined as rank {r}"))
                    } else {
                        None
                    };
                    if let Some(msg) = bad {
                        problem.get_or_insert(msg);
                        let _ =
                            write_frame(&mut s, problem.as_deref().unwrap_or("").as_bytes(), &who);
                        continue;
                    }
                    peers[r] = Some(s);
                    joined += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Some(msg) = &problem {
                        return Err(Error::input("launcher", msg.clone()));
                    }
                    if t0.elapsed() >= timeout {
                        let missing: Vec<String> = (1..world)
                            .filter(|r| peers[*r].is_none())
                            .map(|r| r.to_string())
                            .collect();
                        return Err(Error::input(
                            "launcher",
                            format!(
                                "rank 0 at {at}: rank(s) {} did not join within {:.0} s; check \
                                 that every rank was started and reaches MASTER_ADDR \
                                 (PTXLAB_BOOTSTRAP_TIMEOUT raises the wait)",
                                missing.join(", "),
                                timeout.as_secs_f64()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(net("accepting a rank", e)),
            }
        }
        let verdict = problem.unwrap_or_default();
        for (r, s) in peers.iter_mut().enumerate() {
            if let Some(s) = s {
                write_frame(s, verdict.as_bytes(), &format!("rank {r}"))?;
            }
        }
        if !verdict.is_empty() {
            return Err(Error::input("launcher", verdict));
        }
        Ok(Self {
            rank: 0,
            world,
            peers,
            at,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// Ranks in the job.
    pub fn world(&self) -> usize {
        self.world
    }
    /// `host:port` of rank 0.
    pub fn at(&self) -> &str {
        &self.at
    }

    /// Every rank's `mine`, in rank order, on every rank (a collective:
    /// every rank calls it, in the same order as its other collectives).
    pub fn all_gather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if self.world == 1 {
            return Ok(vec![mine.to_vec()]);
        }
        if self.rank == 0 {
            let mut all = vec![mine.to_vec()];
            for (r, s) in self.peers.iter_mut().enumerate().skip(1) {
                let s = s.as_mut().ok_or_else(|| {
                    Error::input("bootstrap (TCP)", format!("rank {r} has no connection"))
                })?;
                all.push(read_frame(s, &format!("rank {r}"))?);
            }
            let mut packed = Vec::new();
            for a in &all {
                packed.extend_from_slice(&(a.len() as u64).to_le_bytes());
                packed.extend_from_slice(a);
            }
            for (r, s) in self.peers.iter_mut().enumerate().skip(1) {
                if let Some(s) = s {
                    write_frame(s, &packed, &format!("rank {r}"))?;
                }
            }
            Ok(all)
        } else {
            let s = self.peers[0]
                .as_mut()
                .ok_or_else(|| Error::input("bootstrap (TCP)", "no connection to rank 0"))?;
            write_frame(s, mine, "rank 0")?;
            let packed = read_frame(s, "rank 0")?;
            let mut all = Vec::with_capacity(self.world);
            let mut at = 0usize;
            for _ in 0..self.world {
                let len = packed
                    .get(at..at + 8)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
                    .ok_or_else(|| {
                        Error::input("bootstrap (TCP)", "a short all-gather from rank 0")
                    })?;
                let part = packed.get(at + 8..at + 8 + len).ok_or_else(|| {
                    Error::input("bootstrap (TCP)", "a short all-gather from rank 0")
                })?;
                all.push(part.to_vec());
                at += 8 + len;
            }
            Ok(all)
        }
    }

    /// Fails on every rank unless every rank gives the same `what` (a
    /// description of its problem and options); the error names the first
    /// rank that differs from rank 0 and both descriptions.
    pub fn agree(&mut self, what: &str) -> Result<()> {
        let all = self.all_gather(what.as_bytes())?;
        if let Some((r, theirs)) = all.iter().enumerate().find(|(_, a)| *a != &all[0]) {
            return Err(Error::input(
                "launcher",
                format!(
                    "the ranks disagree on the problem: rank 0 has `{}`, rank {r} has `{}`; start \
                     every rank with the same arguments and input files",
                    String::from_utf8_lossy(&all[0]),
                    String::from_utf8_lossy(theirs)
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_port_is_master_port_plus_one_unless_named() {
        assert_eq!(endpoint(env(&[])).unwrap(), None);
        assert_eq!(
            endpoint(env(&[("MASTER_ADDR", "node7"), ("MASTER_PORT", "29500")])).unwrap(),
            Some(("node7".into(), 29501))
        );
        assert_eq!(
            endpoint(env(&[
                ("MASTER_ADDR", "node7"),
                ("MASTER_PORT", "29500"),
                ("PTXLAB_BOOTSTRAP_PORT", "40000")
            ]))
            .unwrap(),
            Some(("node7".into(), 40000))
        );
        for bad in [
            &[("MASTER_ADDR", "n")][..],
            &[("MASTER_ADDR", "n"), ("MASTER_PORT", "x")],
            &[("MASTER_ADDR", "n"), ("MASTER_PORT", "65535")],
        ] {
            let e = endpoint(env(bad)).unwrap_err().to_string();
            assert!(e.contains("MASTER_PORT"), "{e}");
        }
        assert!(timeout(env(&[("PTXLAB_BOOTSTRAP_TIMEOUT", "-1")])).is_err());
    }

    fn free_port() -> u16 {
        TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn ranks_gather_in_rank_order_and_a_disagreement_stops_all() {
        let port = free_port();
        let world = 3;
        let handles: Vec<_> = (0..world)
            .map(|r| {
                std::thread::spawn(move || -> Result<(Vec<Vec<u8>>, Result<()>)> {
                    let mut rdv =
                        Rendezvous::join(r, world, "127.0.0.1", port, Duration::from_secs(20))?;
                    let all = rdv.all_gather(&[r as u8; 3][..r + 1])?;
                    let agreed = rdv.agree(if r == 2 { "grid 9x9" } else { "grid 9x7" });
                    Ok((all, agreed))
                })
            })
            .collect();
        for h in handles {
            let (all, agreed) = h.join().unwrap().unwrap();
            assert_eq!(all, vec![vec![0u8], vec![1, 1], vec![2, 2, 2]]);
            let e = agreed.unwrap_err().to_string();
            assert!(e.contains("rank 2 has `grid 9x9`"), "{e}");
        }
    }

    #[test]
    fn a_rank_with_another_world_size_is_refused() {
        let port = free_port();
        let root = std::thread::spawn(move || {
            Rendezvous::join(0, 2, "127.0.0.1", port, Duration::from_secs(20)).map(|_| ())
        });
        let other = Rendezvous::join(1, 3, "127.0.0.1", port, Duration::from_secs(20));
        let e = other.unwrap_err().to_string();
        assert!(e.contains("world size of 3"), "{e}");
        let e = root.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("world size of 3"), "{e}");
    }

    #[test]
    fn no_rank_zero_is_a_clear_error() {
        let port = free_port();
        let e = Rendezvous::join(1, 2, "127.0.0.1", port, Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no rank 0 listening at 127.0.0.1"), "{e}");
    }
}
