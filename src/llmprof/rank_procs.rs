//! Waiting on the processes of a tensor-parallel group (a run's ranks, and the ranks of
//! `llmprof debug logits --tensor-parallel N`): every one to its end, and at the first failure
//! the others stopped, SIGTERM first and SIGKILL after a grace. A child that runs its rank under
//! another program (stage 2's profiler, whose target is the worker) is started in a process group
//! of its own ([`own_group`]) and signalled as a group ([`signal`]), so the worker it started
//! goes with it: no rank outlives its group, and no pipe to a rank stays open.
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Why a group ended early: a rank exited with an error, or the caller's watch found it stalled
/// (`S`: the watch's account of it).
#[derive(Debug)]
pub enum RankFailure<S> {
    Exited(ExitStatus),
    Stalled(S),
    /// Waiting on it failed (the OS's words): it is no longer ours to wait for.
    Unwaitable(String),
}

/// Makes `cmd`'s process lead a process group of its own, so that [`signal`] reaches the
/// processes it starts too (a profiler's target).
pub fn own_group(cmd: &mut Command) -> &mut Command {
    cmd.process_group(0)
}

/// Sends `sig` to a child we spawned, or to its whole process group where it leads one
/// ([`own_group`]).
pub fn signal(pid: u32, sig: i32) {
    let pid = pid as i32;
    // SAFETY: getpgid(2) and kill(2) on a pid we spawned (not yet reaped), a standard signal.
    unsafe {
        let target = if libc::getpgid(pid) == pid { -pid } else { pid };
        libc::kill(target, sig);
    }
}

/// How often the caller's stall check runs while no rank has failed.
const WATCH_EVERY: Duration = Duration::from_millis(250);
const POLL: Duration = Duration::from_millis(20);

/// Waits until every child exited. `stalled(running)` (every [`WATCH_EVERY`] while none failed;
/// `running[k]`: rank k has not exited) names a rank to end the group for; `alive(pids)` hears
/// the pids still running after each exit (a reaped pid may be reused: signals must go to the
/// others only). At the first failure every rank still running gets SIGTERM, then SIGKILL when
/// it is still there after `grace`. Returns the first failed rank and why.
pub fn wait_all<S>(
    children: &mut [Child],
    grace: Duration,
    mut stalled: impl FnMut(&[bool]) -> Option<(usize, S)>,
    mut alive: impl FnMut(Vec<u32>),
) -> Option<(usize, RankFailure<S>)> {
    let mut done: Vec<bool> = vec![false; children.len()];
    let mut failed: Option<(usize, RankFailure<S>, Instant)> = None;
    let mut watched = Instant::now();
    let (mut termed, mut killed) = (false, false);
    while done.iter().any(|d| !d) {
        let mut reaped = false;
        for (k, child) in children.iter_mut().enumerate() {
            if done[k] {
                continue;
            }
            let ended = match child.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) => (!status.success()).then_some(RankFailure::Exited(status)),
                Err(e) => Some(RankFailure::Unwaitable(e.to_string())),
            };
            done[k] = true;
            reaped = true;
            if let (Some(why), None) = (ended, &failed) {
                failed = Some((k, why, Instant::now()));
            }
        }
        if reaped {
            alive(
                children
                    .iter()
                    .zip(&done)
                    .filter(|(_, d)| !**d)
                    .map(|(c, _)| c.id())
                    .collect(),
            );
        }
        if failed.is_none() && watched.elapsed() > WATCH_EVERY {
            watched = Instant::now();
            let running: Vec<bool> = done.iter().map(|d| !d).collect();
            if let Some((k, why)) = stalled(&running) {
                failed = Some((k, RankFailure::Stalled(why), Instant::now()));
            }
        }
        if let Some((_, _, at)) = &failed {
            let overdue = at.elapsed() > grace;
            for (k, child) in children.iter_mut().enumerate() {
                if done[k] {
                    continue;
                }
                if !termed {
                    signal(child.id(), libc::SIGTERM);
                } else if overdue && !killed {
                    signal(child.id(), libc::SIGKILL);
                }
            }
            killed |= termed && overdue;
            termed = true;
        }
        std::thread::sleep(POLL);
    }
    failed.map(|(k, f, _)| (k, f))
}

/// Kills (with their groups, [`signal`]) and reaps children already started (a later rank could
/// not start).
pub fn stop_all(children: &mut [Child]) {
    for child in children.iter_mut() {
        if let Ok(None) = child.try_wait() {
            signal(child.id(), libc::SIGKILL);
        }
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(script: &str) -> Child {
        Command::new("sh").args(["-c", script]).spawn().unwrap()
    }

    #[test]
    fn a_failed_rank_stops_the_others_and_is_named() {
        let started = Instant::now();
        let mut ranks = vec![sh("sleep 30"), sh("exit 3"), sh("sleep 30")];
        let mut heard = Vec::new();
        let failed = wait_all(
            &mut ranks,
            Duration::from_secs(5),
            |_| None::<(usize, ())>,
            |pids| heard.push(pids.len()),
        );
        match failed {
            Some((1, RankFailure::Exited(s))) => assert_eq!(s.code(), Some(3)),
            other => panic!("want rank 1 exited with 3, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the sleepers were not stopped"
        );
        assert_eq!(
            heard.first(),
            Some(&2),
            "after rank 1's exit two ranks still ran"
        );
    }

    #[test]
    fn a_rank_that_ignores_sigterm_is_killed_after_the_grace() {
        let mut ranks = vec![sh("trap '' TERM; sleep 30"), sh("exit 1")];
        let started = Instant::now();
        let failed = wait_all(
            &mut ranks,
            Duration::from_millis(500),
            |_| None::<(usize, ())>,
            |_| {},
        );
        assert!(matches!(failed, Some((1, RankFailure::Exited(_)))));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the SIGTERM-proof rank still ran"
        );
    }

    #[test]
    fn a_stalled_rank_from_the_watch_ends_the_group() {
        let mut ranks = vec![sh("sleep 30"), sh("sleep 30")];
        let started = Instant::now();
        let failed = wait_all(
            &mut ranks,
            Duration::from_secs(5),
            |running| (running == [true, true]).then_some((0, "rank 0 quiet")),
            |_| {},
        );
        match failed {
            Some((0, RankFailure::Stalled(why))) => assert_eq!(why, "rank 0 quiet"),
            other => panic!("want rank 0 stalled, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// A rank run under another program (here a shell that ignores SIGTERM and starts a
    /// `sleep`) in its own group: when a peer fails, the SIGKILL after the grace reaches what it
    /// started too, not only the shell.
    #[test]
    fn a_rank_in_its_own_group_is_stopped_with_what_it_started() {
        let pidfile =
            std::env::temp_dir().join(format!("llmprof-rank-procs-{}", std::process::id()));
        let _ = std::fs::remove_file(&pidfile);
        let script = format!(
            "trap '' TERM; sleep 300 & echo $! > {}; wait",
            pidfile.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        own_group(&mut cmd);
        let mut ranks = vec![cmd.spawn().unwrap(), sh("sleep 0.5; exit 1")];
        let failed = wait_all(
            &mut ranks,
            Duration::from_millis(300),
            |_| None::<(usize, ())>,
            |_| {},
        );
        assert!(matches!(failed, Some((1, RankFailure::Exited(_)))));
        let grandchild = std::fs::read_to_string(&pidfile).unwrap();
        let _ = std::fs::remove_file(&pidfile);
        // Gone, or a zombie waiting for init (it is dead either way).
        let stat = format!("/proc/{}/stat", grandchild.trim());
        let dead = || std::fs::read_to_string(&stat).map_or(true, |s| s.contains(") Z "));
        let deadline = Instant::now() + Duration::from_secs(3);
        while !dead() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            dead(),
            "the rank's own child {} survived it",
            grandchild.trim()
        );
    }

    #[test]
    fn ranks_that_all_succeed_are_no_failure() {
        let mut ranks = vec![sh("exit 0"), sh("sleep 0.1")];
        assert!(wait_all(
            &mut ranks,
            Duration::from_secs(1),
            |_| None::<(usize, ())>,
            |_| {}
        )
        .is_none());
    }
}
