package kube

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Isolate sets every network interface of this network namespace but
// loopback down: what the isolate init container of a server's pod runs
// (`grpcbench isolate`, with CAP_NET_ADMIN alone), so that the server and
// its clients have loopback only, as in Docker's network "none", whatever
// network plugin the cluster has. The containers that run after it have
// no CAP_NET_ADMIN to set one up again.
func Isolate() error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list the interfaces: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	for _, iface := range ifaces {
		if iface.Flags&net.FlagLoopback != 0 || iface.Flags&net.FlagUp == 0 {
			continue
		}
		ifr, err := unix.NewIfreq(iface.Name)
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("read the flags of %s: %w", iface.Name, err)
		}
		ifr.SetUint16(ifr.Uint16() &^ unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("set %s down: %w", iface.Name, err)
		}
	}
	// What is left must be loopback alone.
	if ifaces, err = net.Interfaces(); err != nil {
		return fmt.Errorf("list the interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagLoopback == 0 && iface.Flags&net.FlagUp != 0 {
			return fmt.Errorf("interface %s is still up", iface.Name)
		}
	}
	return nil
}
