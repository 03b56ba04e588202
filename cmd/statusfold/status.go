package main

import "github.com/spf13/cobra"

func newStatusCommand() *cobra.Command { return &cobra.Command{Use: "status"} }
