//! Master changes a drain causes are planned (`data.planned`).

use super::*;

/// A failover a drain causes, and the preempt back after the undrain, are
/// planned; a failover long after the undrain is not.
#[test]
fn master_changes_around_a_drain_are_planned() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.hosts.get_mut("a").unwrap().drained = true;
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].data["planned"], true);
    let a = &out.events[0].data["cluster"]["members"][0];
    assert_eq!(
        (a["host"].as_str(), a["drain"]["drained"].as_bool()),
        (Some("a"), Some(true))
    );
    // Undrained: preempt gives a the master back, a planned change too.
    sim.at(10_000);
    sim.hosts.get_mut("a").unwrap().drained = false;
    sim.at(0);
    sim.state("a", "MASTER");
    sim.state("b", "BACKUP");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(
        out.events[0].data["planned"], true,
        "within the window after the undrain"
    );
    // Long after, a failover is news again.
    sim.at(PLANNED_WINDOW_SECS * 1000);
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].data["planned"], false);
}
