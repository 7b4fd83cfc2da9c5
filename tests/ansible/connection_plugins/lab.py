# A connection to a simulated host of scripts/lab, for the lab test of the Ansible
# roles (agent/tests/e2e/lab_ansible.rs). The hosts have no ssh: every command
# Ansible runs (its temporary directory, the modules, pipelined or not) goes
# through `scripts/lab exec HOST`, which enters the host's namespaces (network,
# mount, PID, UTS, IPC). Files are put where the local connection puts them,
# which the host sees too as long as the remote temporary directory is not
# under /tmp, /run or /etc (the host's own there).
from __future__ import annotations

DOCUMENTATION = """
name: lab
short_description: run commands inside a host of scripts/lab
description:
  - The local connection, with every command run through C(scripts/lab exec HOST).
author: vrrp-monitor
options:
  lab_host:
    description: The lab's host (h1, h2, ...).
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
  lab_script:
    description: Path of scripts/lab.
    env:
      - name: VRRP_LAB_SCRIPT
    vars:
      - name: ansible_lab_script
extends_documentation_fragment:
  - connection_pipelining
"""

import shlex

from ansible.plugins.connection.local import Connection as LocalConnection


class Connection(LocalConnection):
    transport = "lab"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        wrapped = shlex.join(
            [
                self.get_option("lab_script"),
                "exec",
                self.get_option("lab_host"),
                "/bin/sh",
                "-c",
                cmd,
            ]
        )
        return super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)
