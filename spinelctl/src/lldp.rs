//! `spinelctl lldp ...`: listen for LLDP neighbours; advertise this host or an emulated switch.
//!
//! Both run `spinel_node::lldp`'s loop, the one the fabric agent runs. Sockets are opened inside
//! the namespace given by `--netns` before the loop starts. SIGINT and SIGTERM end both
//! commands cleanly: `listen` prints what it has, `send` sends its shutdown LLDPDU.

use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hostnet::netns::NetNs;
use hostnet::packet::PacketSocket;
use spinel_node::lldp::{Advert, Event, LldpPorts, open_ports};
use spinel_wire::MacAddr;
use spinel_wire::lldp::frame::{DEFAULT_MAX_LLDPDU, LldpFrame, LldpGroup, VlanTag};
use spinel_wire::lldp::remote::{DEFAULT_MAX_NEIGHBORS, RxOutcome};
use spinel_wire::lldp::{LocalSystem, TxTiming};
use spinel_wire::neighbor::{
    AppPriority, AppSelector, Capabilities, Capability, ChassisIdSubtype, Dcbx, EtsConfiguration,
    ManagementAddress, Neighbor, NeighborTable, Observer, PfcConfiguration, PortIdSubtype, Role,
    Tsa, VlanName,
};

/// LLDP commands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Listen on interfaces and print the neighbours seen (the stable neighbour-table schema).
    Listen(ListenArgs),
    /// Advertise with the 802.1AB schedule: this host by default, or any switch you describe.
    #[command(alias = "advertise")]
    Send(Box<SendArgs>),
}

/// Where to run and on which interfaces.
#[derive(clap::Args)]
pub struct Target {
    /// Network namespace: a path, or a bare name meaning /run/netns/NAME (default: ours).
    #[arg(long)]
    netns: Option<String>,
    /// Interface(s) to use; repeat the flag or separate with commas.
    #[arg(long = "iface", required = true, value_delimiter = ',')]
    ifaces: Vec<String>,
}

/// `spinelctl lldp listen`.
#[derive(clap::Args)]
pub struct ListenArgs {
    #[command(flatten)]
    target: Target,
    /// How long to listen, in seconds (one msgTxInterval plus margin by default).
    #[arg(long = "for", default_value_t = 35.0)]
    duration: f64,
    /// Stop as soon as this many neighbours are known (over all interfaces).
    #[arg(long)]
    until_neighbors: Option<usize>,
    /// Print JSON (schema spinel.dev/neighbors/v1) instead of a table.
    #[arg(long)]
    json: bool,
    /// Observer name written in the table (default: the hostname).
    #[arg(long)]
    node_name: Option<String>,
    /// Observer role written in the table.
    #[arg(long, value_enum, default_value = "host")]
    role: RoleArg,
    /// Most neighbours kept per interface (lldpd keeps 32).
    #[arg(long, default_value_t = DEFAULT_MAX_NEIGHBORS)]
    max_neighbors: usize,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Host,
    Switch,
}

/// `spinelctl lldp send`.
#[derive(clap::Args)]
pub struct SendArgs {
    #[command(flatten)]
    target: Target,
    /// JSON description of what to advertise (the neighbour schema's field names, without
    /// ttl); the flags below override it. `{iface}` in port_id or port_description is
    /// replaced by the interface name.
    #[arg(long)]
    describe: Option<PathBuf>,
    /// Chassis ID value (default: MAC of the first interface).
    #[arg(long)]
    chassis_id: Option<String>,
    /// Chassis ID subtype.
    #[arg(long, value_enum)]
    chassis_id_subtype: Option<ChassisSubtypeArg>,
    /// Port ID value (default: the interface name; `{iface}` is replaced).
    #[arg(long)]
    port_id: Option<String>,
    /// Port ID subtype.
    #[arg(long, value_enum)]
    port_id_subtype: Option<PortSubtypeArg>,
    /// Port Description (`{iface}` is replaced).
    #[arg(long)]
    port_description: Option<String>,
    /// System Name (default: the hostname).
    #[arg(long)]
    system_name: Option<String>,
    /// System Description.
    #[arg(long)]
    system_description: Option<String>,
    /// Capabilities, supported and enabled (e.g. bridge,router).
    #[arg(long, value_delimiter = ',', value_parser = capability_parser())]
    capabilities: Vec<Capability>,
    /// Management address (repeatable); interface number = the interface's ifIndex.
    #[arg(long = "mgmt-addr")]
    mgmt_addrs: Vec<IpAddr>,
    /// 802.3 Maximum Frame Size.
    #[arg(long)]
    mfs: Option<u16>,
    /// 802.1 Port VLAN ID.
    #[arg(long)]
    pvid: Option<u16>,
    /// 802.1 VLAN Name as VID:NAME (repeatable).
    #[arg(long = "vlan-name")]
    vlan_names: Vec<String>,
    /// DCBX PFC: priorities with PFC enabled (e.g. 3 or 3,4; empty for none).
    #[arg(long)]
    pfc: Option<String>,
    /// DCBX PFC capability (priorities that can be PFC-enabled at once).
    #[arg(long, default_value_t = 8)]
    pfc_cap: u8,
    /// DCBX APP entry PRIO:SELECTOR:PROTOCOL, selector ethertype|tcp|udp|port|dscp
    /// (e.g. 3:udp:4791, 3:dscp:26; repeatable).
    #[arg(long = "app")]
    apps: Vec<String>,
    /// DCBX ETS Configuration: traffic class of priorities 0-7 (e.g. 0,0,0,3,0,0,6,0).
    #[arg(long)]
    ets_priority_tc: Option<String>,
    /// DCBX ETS bandwidth percent of TCs 0-7 (e.g. 50,0,0,50,0,0,0,0).
    #[arg(long)]
    ets_bandwidth: Option<String>,
    /// DCBX ETS TSA of TCs 0-7 (strict|cbs|ets|vendor; default: ets where bandwidth > 0).
    #[arg(long)]
    ets_tsa: Option<String>,
    /// Set the willing bit in the ETS and PFC TLVs (hosts are willing, switches are not).
    #[arg(long)]
    willing: bool,
    /// msgTxInterval in seconds.
    #[arg(long, default_value_t = 30)]
    tx_interval: u16,
    /// msgTxHold (TTL = interval x hold + 1).
    #[arg(long, default_value_t = 4)]
    tx_hold: u16,
    /// Stop after this many seconds (sending the shutdown LLDPDU); default: until SIGINT/SIGTERM.
    #[arg(long = "for")]
    duration: Option<f64>,
    /// Destination group address.
    #[arg(long, value_enum, default_value = "nearest-bridge")]
    destination: DestinationArg,
    /// Send the LLDPDU with an 802.1Q tag carrying this VLAN ID.
    #[arg(long)]
    vlan: Option<u16>,
    /// Print the frames (hex) and their decoding (JSON) instead of sending.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ChassisSubtypeArg {
    ChassisComponent,
    InterfaceAlias,
    PortComponent,
    Mac,
    NetworkAddress,
    Ifname,
    Local,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PortSubtypeArg {
    InterfaceAlias,
    PortComponent,
    Mac,
    NetworkAddress,
    Ifname,
    AgentCircuitId,
    Local,
}

/// `--capabilities` names (the lldpd-like short forms) and the bits they stand for.
const CAPABILITY_NAMES: [(&str, Capability); 11] = [
    ("other", Capability::Other),
    ("repeater", Capability::Repeater),
    ("bridge", Capability::Bridge),
    ("wlan", Capability::WlanAccessPoint),
    ("router", Capability::Router),
    ("telephone", Capability::Telephone),
    ("docsis", Capability::Docsis),
    ("station", Capability::Station),
    ("c-vlan", Capability::CVlan),
    ("s-vlan", Capability::SVlan),
    ("tpmr", Capability::Tpmr),
];

fn capability_parser() -> impl clap::builder::TypedValueParser<Value = Capability> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(CAPABILITY_NAMES.map(|(name, _)| name)).map(|name| {
        CAPABILITY_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(Capability::Other, |(_, c)| *c)
    })
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DestinationArg {
    #[value(name = "nearest-bridge")]
    Bridge,
    #[value(name = "nearest-non-tpmr-bridge")]
    NonTpmrBridge,
    #[value(name = "nearest-customer-bridge")]
    CustomerBridge,
}

/// Runs an LLDP command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Listen(args) => listen(&args),
        Command::Send(args) => send(&args),
    }
}

fn open_netns(netns: Option<&str>) -> anyhow::Result<NetNs> {
    let path = match netns {
        None => return NetNs::current().context("cannot open our own network namespace"),
        Some(s) if s.contains('/') => PathBuf::from(s),
        Some(name) => Path::new("/run/netns").join(name),
    };
    NetNs::open(&path).with_context(|| {
        format!(
            "--netns {}: give a namespace path or a name under /run/netns",
            path.display()
        )
    })
}

fn open_sockets(target: &Target) -> anyhow::Result<Vec<PacketSocket>> {
    let ns = open_netns(target.netns.as_deref())?;
    open_ports(&ns, &target.ifaces)
        .context("cannot open an LLDP socket (raw sockets need CAP_NET_RAW; check --iface)")
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".to_owned())
}

fn seconds(value: f64, flag: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .with_context(|| format!("{flag} {value}: expected a non-negative number of seconds"))
}

/// Registers SIGINT and SIGTERM handlers now, before anything tells the world we are running
/// (a signal arriving earlier would kill us with the default action), and returns what
/// completes on either, or at `deadline` if there is one. Call it inside the runtime.
fn stop_signal(deadline: Option<Instant>) -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    Ok(async move {
        let at_deadline = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            () = at_deadline => {}
        }
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")
}

fn listen(args: &ListenArgs) -> anyhow::Result<ExitCode> {
    let sockets = open_sockets(&args.target)?;
    let deadline = Instant::now() + seconds(args.duration, "--for")?;
    let snapshot = runtime()?.block_on(async {
        let stop = stop_signal(Some(deadline))?;
        let mut ports = LldpPorts::new(sockets, args.max_neighbors)?;
        let until = args.until_neighbors;
        ports
            .run(stop, |event, table| {
                if let Event::Received {
                    port,
                    outcome: RxOutcome::Discarded(e),
                } = event
                {
                    eprintln!(
                        "spinelctl: discarded LLDP frame on {port}: {:#}",
                        anyhow::Error::new(e.clone())
                    );
                }
                match until {
                    Some(n) if table.len() >= n => ControlFlow::Break(()),
                    _ => ControlFlow::Continue(()),
                }
            })
            .await?;
        let observer = Observer {
            name: args.node_name.clone().unwrap_or_else(hostname),
            chassis_id: None,
            role: Some(match args.role {
                RoleArg::Host => Role::Host,
                RoleArg::Switch => Role::Switch,
            }),
        };
        anyhow::Ok(ports.table().snapshot(observer, Instant::now()))
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&snapshot)?);
    } else {
        print!("{}", render_table(&snapshot));
    }
    Ok(ExitCode::SUCCESS)
}

fn subtype_name<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn dcbx_summary(d: &Dcbx) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &d.pfc {
        let prios: Vec<String> = p.enabled_priorities.iter().map(u8::to_string).collect();
        parts.push(format!(
            "PFC {}",
            if prios.is_empty() {
                "none".into()
            } else {
                prios.join(",")
            }
        ));
    }
    if let Some(e) = &d.ets_configuration {
        let tcs: Vec<String> = (0..8)
            .filter(|&tc| e.tc_bandwidth[tc] > 0 || e.tsa[tc] != Tsa::Strict)
            .map(|tc| format!("TC{tc}:{}%", e.tc_bandwidth[tc]))
            .collect();
        parts.push(format!(
            "ETS {}{}",
            tcs.join(","),
            if e.willing { " (willing)" } else { "" }
        ));
    }
    if let Some(app) = &d.application_priority {
        let entries: Vec<String> = app
            .iter()
            .map(|a| {
                format!(
                    "{}/{}->{}",
                    subtype_name(&a.selector),
                    a.protocol,
                    a.priority
                )
            })
            .collect();
        parts.push(format!("APP {}", entries.join(",")));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

fn render_table(t: &NeighborTable) -> String {
    let mut rows = vec![
        [
            "PORT",
            "SYSTEM",
            "CHASSIS ID",
            "PORT ID",
            "TTL",
            "AGE",
            "CAPS",
            "MFS",
            "DCBX",
        ]
        .map(String::from),
    ];
    for p in &t.ports {
        for n in &p.neighbors {
            let caps = n.capabilities.as_ref().map_or("-".into(), |c| {
                c.enabled
                    .iter()
                    .map(subtype_name)
                    .collect::<Vec<_>>()
                    .join(",")
            });
            rows.push([
                p.port.clone(),
                n.system_name.clone().unwrap_or_else(|| "-".into()),
                format!(
                    "{} ({})",
                    n.chassis_id.value,
                    subtype_name(&n.chassis_id.subtype)
                ),
                format!("{} ({})", n.port_id.value, subtype_name(&n.port_id.subtype)),
                n.ttl.to_string(),
                n.age_seconds.map_or("-".into(), |a| format!("{a}s")),
                caps,
                n.max_frame_size.map_or("-".into(), |m| m.to_string()),
                dcbx_summary(&n.dcbx),
            ]);
        }
    }
    let mut widths = [0usize; 9];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    for p in &t.ports {
        if let Some(c) = &p.counters {
            out.push_str(&format!(
                "{}: {} neighbour(s); {} frames in, {} discarded, {} with errors, {} TLVs discarded, {} unrecognised; {} inserts, {} deletes, {} ageouts\n",
                p.port,
                p.neighbors.len(),
                c.frames_in,
                c.frames_discarded,
                c.frames_in_errors,
                c.tlvs_discarded,
                c.tlvs_unrecognized,
                c.inserts,
                c.deletes,
                c.ageouts
            ));
        }
    }
    out
}

fn parse_list<T>(flag: &str, s: &str, item: impl Fn(&str) -> Option<T>) -> anyhow::Result<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| item(p).with_context(|| format!("{flag}: cannot read {p:?}")))
        .collect()
}

fn eight<T: Copy>(flag: &str, v: Vec<T>) -> anyhow::Result<[T; 8]> {
    <[T; 8]>::try_from(v).map_err(|v| anyhow::anyhow!("{flag}: expected 8 values, got {}", v.len()))
}

fn parse_app(s: &str) -> anyhow::Result<AppPriority> {
    let parts: Vec<&str> = s.split(':').collect();
    let [prio, sel, proto] = parts.as_slice() else {
        bail!("--app {s:?}: expected PRIO:SELECTOR:PROTOCOL, e.g. 3:udp:4791");
    };
    let selector = match *sel {
        "ethertype" => AppSelector::Ethertype,
        "tcp" => AppSelector::TcpPort,
        "udp" => AppSelector::UdpPort,
        "port" => AppSelector::AnyPort,
        "dscp" => AppSelector::Dscp,
        other => bail!("--app {s:?}: unknown selector {other:?} (ethertype|tcp|udp|port|dscp)"),
    };
    let protocol = match proto.strip_prefix("0x") {
        Some(hex) => u16::from_str_radix(hex, 16),
        None => proto.parse(),
    }
    .with_context(|| format!("--app {s:?}: protocol must be a 16-bit number"))?;
    Ok(AppPriority {
        priority: prio
            .parse()
            .with_context(|| format!("--app {s:?}: priority must be 0-7"))?,
        selector,
        protocol,
    })
}

/// The description for one interface: file, then defaults, then flags.
fn local_system(
    args: &SendArgs,
    socket: &PacketSocket,
    chassis_mac: MacAddr,
) -> anyhow::Result<LocalSystem> {
    let iface = socket.ifname();
    let mut l = match &args.describe {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --describe {}", path.display()))?;
            serde_json::from_str::<LocalSystem>(&text).with_context(|| {
                format!("--describe {}: not a valid description", path.display())
            })?
        }
        None => {
            let mut l = LocalSystem::new(chassis_mac, iface);
            l.system_name = Some(hostname());
            l
        }
    };
    l.port_id.value = l.port_id.value.replace("{iface}", iface);
    l.port_description = l.port_description.map(|d| d.replace("{iface}", iface));
    apply_identity(args, iface, &mut l);
    apply_capabilities(args, &mut l);
    apply_port_facts(args, socket, &mut l)?;
    apply_dcbx(args, &mut l)?;
    Ok(l)
}

/// Chassis, port and system identity flags.
fn apply_identity(args: &SendArgs, iface: &str, l: &mut LocalSystem) {
    if let Some(v) = &args.chassis_id {
        l.chassis_id.value = v.clone();
    }
    if let Some(s) = args.chassis_id_subtype {
        l.chassis_id.subtype = match s {
            ChassisSubtypeArg::ChassisComponent => ChassisIdSubtype::ChassisComponent,
            ChassisSubtypeArg::InterfaceAlias => ChassisIdSubtype::InterfaceAlias,
            ChassisSubtypeArg::PortComponent => ChassisIdSubtype::PortComponent,
            ChassisSubtypeArg::Mac => ChassisIdSubtype::MacAddress,
            ChassisSubtypeArg::NetworkAddress => ChassisIdSubtype::NetworkAddress,
            ChassisSubtypeArg::Ifname => ChassisIdSubtype::InterfaceName,
            ChassisSubtypeArg::Local => ChassisIdSubtype::Local,
        };
    }
    if let Some(v) = &args.port_id {
        l.port_id.value = v.replace("{iface}", iface);
    }
    if let Some(s) = args.port_id_subtype {
        l.port_id.subtype = match s {
            PortSubtypeArg::InterfaceAlias => PortIdSubtype::InterfaceAlias,
            PortSubtypeArg::PortComponent => PortIdSubtype::PortComponent,
            PortSubtypeArg::Mac => PortIdSubtype::MacAddress,
            PortSubtypeArg::NetworkAddress => PortIdSubtype::NetworkAddress,
            PortSubtypeArg::Ifname => PortIdSubtype::InterfaceName,
            PortSubtypeArg::AgentCircuitId => PortIdSubtype::AgentCircuitId,
            PortSubtypeArg::Local => PortIdSubtype::Local,
        };
    }
    if let Some(v) = &args.port_description {
        l.port_description = Some(v.replace("{iface}", iface));
    }
    if let Some(v) = &args.system_name {
        l.system_name = Some(v.clone());
    }
    if let Some(v) = &args.system_description {
        l.system_description = Some(v.clone());
    }
}

/// `--capabilities`: supported and enabled alike.
fn apply_capabilities(args: &SendArgs, l: &mut LocalSystem) {
    if args.capabilities.is_empty() {
        return;
    }
    let caps = args.capabilities.clone();
    l.capabilities = Some(Capabilities {
        supported: caps.clone(),
        enabled: caps,
    });
}

/// Management addresses, frame size and VLANs of the port.
fn apply_port_facts(
    args: &SendArgs,
    socket: &PacketSocket,
    l: &mut LocalSystem,
) -> anyhow::Result<()> {
    for addr in &args.mgmt_addrs {
        l.management_addresses.push(ManagementAddress {
            family: if addr.is_ipv4() { 1 } else { 2 },
            address: addr.to_string(),
            interface_numbering: 2,
            interface_number: socket.ifindex(),
            oid: None,
        });
    }
    if args.mfs.is_some() {
        l.max_frame_size = args.mfs;
    }
    if args.pvid.is_some() {
        l.port_vlan_id = args.pvid;
    }
    for v in &args.vlan_names {
        let (vid, name) = v
            .split_once(':')
            .with_context(|| format!("--vlan-name {v:?}: expected VID:NAME"))?;
        l.vlan_names.push(VlanName {
            vid: vid
                .parse()
                .with_context(|| format!("--vlan-name {v:?}: bad VID"))?,
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// DCBX: PFC, application priorities and ETS.
fn apply_dcbx(args: &SendArgs, l: &mut LocalSystem) -> anyhow::Result<()> {
    if let Some(p) = &args.pfc {
        l.dcbx.pfc = Some(PfcConfiguration {
            willing: args.willing,
            mbc: false,
            capability: args.pfc_cap,
            enabled_priorities: parse_list("--pfc", p, |s| s.parse().ok())?,
        });
    }
    if !args.apps.is_empty() {
        l.dcbx.application_priority = Some(
            args.apps
                .iter()
                .map(|a| parse_app(a))
                .collect::<anyhow::Result<_>>()?,
        );
    }
    let Some(tc) = &args.ets_priority_tc else {
        if args.ets_bandwidth.is_some() || args.ets_tsa.is_some() {
            bail!("--ets-bandwidth and --ets-tsa need --ets-priority-tc");
        }
        return Ok(());
    };
    let priority_tc = eight(
        "--ets-priority-tc",
        parse_list("--ets-priority-tc", tc, |s| s.parse().ok())?,
    )?;
    let tc_bandwidth = match &args.ets_bandwidth {
        Some(b) => eight(
            "--ets-bandwidth",
            parse_list("--ets-bandwidth", b, |s| s.parse().ok())?,
        )?,
        None => bail!("--ets-priority-tc needs --ets-bandwidth"),
    };
    let tsa = match &args.ets_tsa {
        Some(t) => eight(
            "--ets-tsa",
            parse_list("--ets-tsa", t, |s| match s {
                "strict" => Some(Tsa::Strict),
                "cbs" => Some(Tsa::CreditBasedShaper),
                "ets" => Some(Tsa::Ets),
                "vendor" => Some(Tsa::VendorSpecific),
                _ => None,
            })?,
        )?,
        None => tc_bandwidth.map(|b| if b > 0 { Tsa::Ets } else { Tsa::Strict }),
    };
    l.dcbx.ets_configuration = Some(EtsConfiguration {
        willing: args.willing,
        cbs: false,
        max_tcs: 8,
        priority_tc,
        tc_bandwidth,
        tsa,
    });
    Ok(())
}

/// The frame and its shutdown frame for every socket.
fn adverts(
    args: &SendArgs,
    sockets: &[PacketSocket],
    timing: TxTiming,
) -> anyhow::Result<Vec<Advert>> {
    let chassis_mac = MacAddr(sockets.first().map(PacketSocket::mac).unwrap_or_default());
    let destination = match args.destination {
        DestinationArg::Bridge => LldpGroup::NearestBridge,
        DestinationArg::NonTpmrBridge => LldpGroup::NearestNonTpmrBridge,
        DestinationArg::CustomerBridge => LldpGroup::NearestCustomerBridge,
    };
    let vlan = args.vlan.map(|vid| VlanTag {
        pcp: 7,
        dei: false,
        vid,
    });
    sockets
        .iter()
        .map(|socket| {
            let local = local_system(args, socket, chassis_mac)?;
            let lldpdu = local
                .lldpdu(timing.ttl())
                .with_context(|| format!("cannot advertise on {}", socket.ifname()))?;
            let frame = LldpFrame {
                destination,
                source: MacAddr(socket.mac()),
                vlan,
                lldpdu,
            };
            let shutdown = LldpFrame {
                lldpdu: frame.lldpdu.shutdown(),
                ..frame.clone()
            };
            Ok(Advert {
                frame: frame
                    .to_vec(DEFAULT_MAX_LLDPDU)
                    .context("encode the LLDP frame")?,
                shutdown: shutdown
                    .to_vec(DEFAULT_MAX_LLDPDU)
                    .context("encode the shutdown frame")?,
                timing,
            })
        })
        .collect()
}

fn send(args: &SendArgs) -> anyhow::Result<ExitCode> {
    let timing = TxTiming {
        tx_interval: args.tx_interval,
        tx_hold: args.tx_hold,
        ..TxTiming::default()
    };
    timing.validate().context("invalid timers")?;
    let sockets = open_sockets(&args.target)?;
    let adverts = adverts(args, &sockets, timing)?;
    if args.dry_run {
        for (socket, advert) in sockets.iter().zip(&adverts) {
            let decoded =
                spinel_wire::lldp::decode_frame(&advert.frame).context("decode our own frame")?;
            let hex: Vec<String> = advert.frame.iter().map(|b| format!("{b:02x}")).collect();
            println!(
                "# {}: {} octets\n{}",
                socket.ifname(),
                advert.frame.len(),
                hex.join(" ")
            );
            println!(
                "{}",
                serde_json::to_string_pretty(&Neighbor::from(&decoded.lldpdu))?
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let deadline = args
        .duration
        .map(|d| seconds(d, "--for"))
        .transpose()?
        .map(|d| Instant::now() + d);
    let names: Vec<String> = sockets.iter().map(|s| s.ifname().to_owned()).collect();
    runtime()?.block_on(async {
        let stop = stop_signal(deadline)?;
        let mut ports = LldpPorts::new(sockets, DEFAULT_MAX_NEIGHBORS)?;
        let now = Instant::now();
        for (name, advert) in names.iter().zip(adverts) {
            ports
                .advertise(name, advert, now)
                .map_err(anyhow::Error::msg)?;
            eprintln!(
                "spinelctl: advertising on {name} every {} s, TTL {}",
                timing.tx_interval,
                timing.ttl()
            );
        }
        ports.run(stop, |_, _| ControlFlow::Continue(())).await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_entries_parse() {
        assert_eq!(
            parse_app("3:udp:4791").unwrap(),
            AppPriority {
                priority: 3,
                selector: AppSelector::UdpPort,
                protocol: 4791
            }
        );
        assert_eq!(parse_app("6:dscp:48").unwrap().selector, AppSelector::Dscp);
        assert_eq!(parse_app("1:ethertype:0x8915").unwrap().protocol, 0x8915);
        assert!(parse_app("3:udp").is_err());
        assert!(parse_app("3:sctp:1").is_err());
    }

    #[test]
    fn table_renders_neighbours_and_counters() {
        let json = r#"{"schema":"spinel.dev/neighbors/v1","observer":{"name":"n1"},"ports":[
          {"port":"eth0","neighbors":[{"chassis_id":{"subtype":"mac_address","value":"0c:42:a1:00:00:01"},
           "port_id":{"subtype":"interface_name","value":"swp1"},"ttl":120,"age_seconds":3,
           "system_name":"leaf01","max_frame_size":9216,
           "dcbx":{"pfc":{"willing":false,"mbc":false,"capability":8,"enabled_priorities":[3]}}}],
           "counters":{"frames_in":4,"frames_discarded":0,"frames_in_errors":0,"tlvs_discarded":0,
           "tlvs_unrecognized":0,"ageouts":0,"inserts":1,"deletes":0,"frames_out":0}}]}"#;
        let t: NeighborTable = serde_json::from_str(json).unwrap();
        let out = render_table(&t);
        assert!(out.contains("leaf01"), "{out}");
        assert!(out.contains("0c:42:a1:00:00:01 (mac_address)"), "{out}");
        assert!(out.contains("PFC 3"), "{out}");
        assert!(out.contains("eth0: 1 neighbour(s); 4 frames in"), "{out}");
    }

    #[test]
    fn capability_names_map_to_their_bits() {
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("c")
                .long("c")
                .value_delimiter(',')
                .value_parser(capability_parser()),
        );
        let m = cmd
            .clone()
            .try_get_matches_from(["t", "--c", "wlan,c-vlan,router"])
            .unwrap();
        let caps: Vec<Capability> = m.get_many("c").unwrap().copied().collect();
        assert_eq!(
            caps,
            [
                Capability::WlanAccessPoint,
                Capability::CVlan,
                Capability::Router
            ]
        );
        assert!(cmd.try_get_matches_from(["t", "--c", "c_vlan"]).is_err());
    }
}
