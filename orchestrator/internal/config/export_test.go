package config

var RuleNames = ruleNames
